--[[
  Files a dead-letter record and writes the job's final attempt state, atomically; then applies the
  queue's retention to the other records (evicting at most ARGV[7] of the oldest, counted in
  meta.evicted). The record being filed is never evicted by its own filing, however old: the next
  filing drops it.

  KEYS[1]  T:dl:seq     KEYS[2]  T:dl:rec     KEYS[3]  T:dl:ix      KEYS[4]  T:dl:claim
  KEYS[5]  T:dl:all     KEYS[6]  T:dl:r:<reason>   KEYS[7]  T:dl:d:<dependency>   KEYS[8]  T:dl:n:<name>
  KEYS[9]  T:att:<job id>:<createdAt>   the job's attempt state
  KEYS[10] T:dl:meta    retention limits and the eviction count
  (T = "{<prefix>:q:<queue>}", see includes/dead-letters.lua)

  ARGV[1]  the record's JSON
  ARGV[2]  deadLetteredAt, ms (the score)
  ARGV[3]  the attempt state JSON up to the record id: the id is written between ARGV[3] and ARGV[4]
  ARGV[4]  the rest of the attempt state JSON
  ARGV[5]  the attempt state's time to live, ms
  ARGV[6]  TEST ONLY: the time in ms; "" (always, in production) uses the server's TIME
  ARGV[7]  at most this many evictions

  Returns
    {1, id, evicted}   filed under the new id; evicted is "" when retention evicted nothing, else the JSON
                       {"count": n, "reasons": {<reason>: n}, "limits": {"maxAgeMs"|"maxCount": n}}
    {0, id}            this job (same id and createdAt) was filed before, as id: nothing written
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

local now = serverNowMs(ARGV[6])
local previous = dlReadAttempts(KEYS[9], now)
if previous then
  local ok, state = pcall(cjson.decode, previous)
  if ok and type(state) == 'table' and type(state.deadLettered) == 'table'
    and type(state.deadLettered.recordId) == 'string' then
    return { 0, state.deadLettered.recordId }
  end
end

local id = string.format('%d', redis.call('INCR', KEYS[1]))
local member = dlMember(id)
local at = ARGV[2]
redis.call('HSET', KEYS[2], id, ARGV[1])
redis.call('HSET', KEYS[3], id, cjson.encode({ at, KEYS[6], KEYS[7], KEYS[8] }))
for i = 5, 8 do
  redis.call('ZADD', KEYS[i], at, member)
end
dlWriteAttempts(KEYS[9], ARGV[3] .. id .. ARGV[4], now, tonumber(ARGV[5]))

local meta = KEYS[10]
local limits = redis.call('HMGET', meta, 'maxAgeMs', 'maxCount')
local maxAge, maxCount = tonumber(limits[1]), tonumber(limits[2])
local report = ''
if maxAge or maxCount then
  -- The reason of an evicted record, from its reason index key (T:dl:r:<reason>), readable even when the
  -- record is not.
  local reasonKeyPrefix = string.sub(KEYS[5], 1, #KEYS[5] - #'all') .. 'r:'
  local evicted, reasons, limits = 0, {}, {}
  while evicted < tonumber(ARGV[7]) do
    local oldest = redis.call('ZRANGE', KEYS[5], 0, 1, 'WITHSCORES')
    if oldest[1] == member then
      oldest = { oldest[3], oldest[4] }
    end
    if not oldest[1] then
      break
    end
    local tooMany = maxCount and redis.call('ZCARD', KEYS[5]) > maxCount
    local tooOld = maxAge and tonumber(oldest[2]) < now - maxAge
    if not tooMany and not tooOld then
      break
    end
    local victim = dlId(oldest[1])
    local reason = 'unknown'
    local ok, fields = pcall(cjson.decode, redis.call('HGET', KEYS[3], victim) or '')
    if ok and type(fields) == 'table' and type(fields[2]) == 'string'
      and string.sub(fields[2], 1, #reasonKeyPrefix) == reasonKeyPrefix then
      reason = string.sub(fields[2], #reasonKeyPrefix + 1)
    end
    dlRemove(KEYS[2], KEYS[3], KEYS[4], KEYS[5], victim)
    evicted = evicted + 1
    reasons[reason] = (reasons[reason] or 0) + 1
    local limit = tooOld and 'maxAgeMs' or 'maxCount'
    limits[limit] = (limits[limit] or 0) + 1
  end
  if evicted > 0 then
    redis.call('HINCRBY', meta, 'evicted', evicted)
    report = cjson.encode({ count = evicted, reasons = reasons, limits = limits })
  end
end
return { 1, id, report }
