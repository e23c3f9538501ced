--[[
  Claims a dead-letter record for replay, or returns the claim an earlier replay left.

  KEYS[1]  T:dl:all     KEYS[2]  T:dl:claim
  ARGV[1]  the record id
  ARGV[2]  the replay job id to claim it under (ignored when a claim exists)
  ARGV[3]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  the claim's JSON {"jobId": ..., "claimedAt": ...}, or false when the record is gone
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

if not redis.call('ZSCORE', KEYS[1], dlMember(ARGV[1])) then
  return false
end
local existing = redis.call('HGET', KEYS[2], ARGV[1])
if existing then
  return existing
end
local claim = '{"jobId":' .. cjson.encode(ARGV[2]) .. ',"claimedAt":' .. string.format('%d', serverNowMs(ARGV[3])) .. '}'
redis.call('HSET', KEYS[2], ARGV[1], claim)
return claim
