-- Milliseconds from the Redis server's clock (every stormguard script's only clock), or the test-only
-- override when one is given.
local function serverNowMs(override)
  if override ~= nil and override ~= '' then
    return tonumber(override)
  end
  -- Before Redis 5 a script must opt in to effects replication to write after reading TIME.
  if redis.replicate_commands then
    redis.replicate_commands()
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
