--[[
  Files a dead-letter record and writes the job's final attempt state, atomically; then applies the
  queue's retention (evicting at most ARGV[7] of the oldest records, counted in meta.evicted).

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
    {1, id}   filed under the new id
    {0, id}   this job (same id and createdAt) was filed before, as id: nothing written
]]
--@include server-time
--@include dead-letters

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
if maxAge or maxCount then
  local evicted = 0
  while evicted < tonumber(ARGV[7]) do
    local oldest = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
    if #oldest == 0 then
      break
    end
    local tooMany = maxCount and redis.call('ZCARD', KEYS[5]) > maxCount
    local tooOld = maxAge and tonumber(oldest[2]) < now - maxAge
    if not tooMany and not tooOld then
      break
    end
    dlRemove(KEYS[2], KEYS[3], KEYS[4], KEYS[5], dlId(oldest[1]))
    evicted = evicted + 1
  end
  if evicted > 0 then
    redis.call('HINCRBY', meta, 'evicted', evicted)
  end
end
return { 1, id }
