--[[
  Records, refreshes, removes or lists the workers holding a queue paused for a dependency (see
  includes/flow.lua). An entry lives until its expiry unless noted again, so a crashed worker's entry ages
  out by itself; a note also drops the entries that have aged out, and the hash expires after the last note's
  time to live.

  KEYS[1]  D:paused
  ARGV[1]  "note" | "clear" | "list" (list writes nothing)
  ARGV[2]  the entry's field, the JSON array [queue, worker] ("" for list)
  ARGV[3]  note: how long the pause lasts from now, ms (>= 0)
  ARGV[4]  note: the entry's time to live, ms (> 0)
  ARGV[5]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  note, clear: 1
           list: { field, since ms, until ms, expires at ms, ... } for each live entry, in no order
]]
--#include "includes/server-time.lua"

local now = serverNowMs(ARGV[5])
local key = KEYS[1]
local op = ARGV[1]

-- The entry's three numbers, or nil when absent.
local function entryOf(value)
  if not value then return nil end
  local since, untilMs, expires = string.match(value, '^(%d+) (%d+) (%d+)$')
  if not since then return nil end
  return tonumber(since), tonumber(untilMs), tonumber(expires)
end

if op == 'note' then
  local since, _, expires = entryOf(redis.call('HGET', key, ARGV[2]))
  if not since or expires <= now then since = now end
  local ttl = tonumber(ARGV[4])
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local _, _, other = entryOf(all[i + 1])
    if not other or other <= now then redis.call('HDEL', key, all[i]) end
  end
  redis.call('HSET', key, ARGV[2],
    string.format('%d %d %d', since, now + tonumber(ARGV[3]), now + ttl))
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  return 1
elseif op == 'clear' then
  redis.call('HDEL', key, ARGV[2])
  return 1
end

local live = {}
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  local since, untilMs, expires = entryOf(all[i + 1])
  if since and expires > now then
    table.insert(live, all[i])
    table.insert(live, string.format('%d', since))
    table.insert(live, string.format('%d', untilMs))
    table.insert(live, string.format('%d', expires))
  end
end
return live
