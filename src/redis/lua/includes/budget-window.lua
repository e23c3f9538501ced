-- Shared by the budget scripts: the sliding-window arithmetic of src/budget/window.ts, in integers only.
--
-- A dependency's budget is one hash, KEYS[1] = "{<prefix>:<dependency>}:budget", holding a ring of
-- buckets + 1 sub-buckets and running totals over it, so a decision reads a handful of fields, not the ring:
--   t              the newest bucket index written (bucket index = floor(time / bucketMs))
--   S, G, D        successes, spent (granted) and denied summed over the ring
--   s<k> g<k> d<k> the counts of the bucket held in slot k = bucketIndex mod (buckets + 1); with t known,
--                  slot k holds bucket t - ((t - k) mod (buckets + 1))
--   cfg            "<bucketMs>:<buckets>:<ratioPpm>:<minAllowance>", the settings last used (read by the CLI)

local PPM = 1000000

-- Milliseconds from the Redis server's clock, or the test-only override when one is given.
local function budgetNow(override)
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

-- floor(a / b) for non-negative integers, exact (fmod is exact where a float division may round up).
local function intDiv(a, b)
  return (a - math.fmod(a, b)) / b
end

local function budgetAllowance(successes, ratioPpm, minAllowance)
  local earned = intDiv(successes * ratioPpm, PPM)
  if earned > minAllowance then
    return earned
  end
  return minAllowance
end

-- Loads the ring at time `now`, first retiring the slots of buckets that fell out of it (at most
-- buckets + 1 of them, and only when a new bucket starts). Returns a table with the current slot's counts
-- (s, g, d), the totals (S, G, D), and the window sums (successes, spent, denied): the whole buckets plus
-- the oldest one weighted by the part of it still inside the window (successes and denials rounded down,
-- spend rounded up). A different bucket geometry than the stored one starts the counts afresh.
local function budgetLoad(key, now, bucketMs, buckets)
  local slots = buckets + 1
  local current = intDiv(now, bucketMs)
  local cur = math.fmod(current, slots)
  local old = math.fmod(current + 1, slots)
  local raw = redis.call('HMGET', key, 'cfg', 't', 'S', 'G', 'D',
    's' .. cur, 'g' .. cur, 'd' .. cur, 's' .. old, 'g' .. old, 'd' .. old)
  local w = { current = current, cur = cur, cfg = raw[1], S = 0, G = 0, D = 0, s = 0, g = 0, d = 0 }
  local overlap = bucketMs - math.fmod(now, bucketMs)
  local last = tonumber(raw[2])
  local geometry = bucketMs .. ':' .. buckets .. ':'
  if raw[1] and string.sub(raw[1], 1, #geometry) ~= geometry then
    redis.call('DEL', key)
    last = nil
  end
  if last ~= nil and current < last then
    -- Time never goes backwards for a dependency: an earlier time counts as the newest bucket seen.
    current, cur, old, overlap = last, math.fmod(last, slots), math.fmod(last + 1, slots), bucketMs
    w.current, w.cur = current, cur
    raw = redis.call('HMGET', key, 'cfg', 't', 'S', 'G', 'D',
      's' .. cur, 'g' .. cur, 'd' .. cur, 's' .. old, 'g' .. old, 'd' .. old)
  end
  local oldS, oldG, oldD = 0, 0, 0
  if last == nil or current - last >= slots then
    -- Nothing in the ring is recent enough to count.
    if last ~= nil then
      redis.call('DEL', key)
    end
  else
    w.S, w.G, w.D = tonumber(raw[3]) or 0, tonumber(raw[4]) or 0, tonumber(raw[5]) or 0
    if current > last then
      -- Retire the slots of buckets last - buckets .. current - slots: they are reused for last+1 .. current.
      local fields = {}
      for j = last + 1, current do
        local k = math.fmod(j, slots)
        fields[#fields + 1] = 's' .. k
        fields[#fields + 1] = 'g' .. k
        fields[#fields + 1] = 'd' .. k
      end
      local stale = redis.call('HMGET', key, unpack(fields))
      for i = 1, #stale, 3 do
        w.S = w.S - (tonumber(stale[i]) or 0)
        w.G = w.G - (tonumber(stale[i + 1]) or 0)
        w.D = w.D - (tonumber(stale[i + 2]) or 0)
      end
      redis.call('HDEL', key, unpack(fields))
      -- The oldest bucket survived the retirement only if it was written before.
      if current - buckets <= last then
        oldS, oldG, oldD = tonumber(raw[9]) or 0, tonumber(raw[10]) or 0, tonumber(raw[11]) or 0
      end
    else
      w.s, w.g, w.d = tonumber(raw[6]) or 0, tonumber(raw[7]) or 0, tonumber(raw[8]) or 0
      oldS, oldG, oldD = tonumber(raw[9]) or 0, tonumber(raw[10]) or 0, tonumber(raw[11]) or 0
    end
  end
  w.successes = w.S - oldS + intDiv(oldS * overlap, bucketMs)
  w.spent = w.G - oldG + intDiv(oldG * overlap + bucketMs - 1, bucketMs)
  w.denied = w.D - oldD + intDiv(oldD * overlap, bucketMs)
  return w
end

-- Writes the current slot, the totals and (when they changed) the settings; the hash expires on its own.
local function budgetSave(key, w, cfg, ttlMs)
  local c = w.cur
  redis.call('HSET', key, 't', w.current, 'S', w.S, 'G', w.G, 'D', w.D,
    's' .. c, w.s, 'g' .. c, w.g, 'd' .. c, w.d)
  if w.cfg ~= cfg then
    redis.call('HSET', key, 'cfg', cfg)
  end
  redis.call('PEXPIRE', key, ttlMs)
end
