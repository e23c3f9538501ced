--[[
  Reserves one attempt slot under the dependency's slow-start ramp (GCRA with reservations: see pace() in
  src/runtime/flow-control/pacing.ts).

  KEYS[1]  D:flow
  ARGV[1]  slowStartMs (>= 0)
  ARGV[2]  floor, attempts per second (> 0)
  ARGV[3]  maxRatePerSecond, "" for none
  ARGV[4]  maxWaitMs (>= 0): a slot further away is refused, nothing reserved
  ARGV[5]  time to live of the state, ms (> 0)
  ARGV[6]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  { granted (0 | 1), waitMs (text), tatMs (text) }
]]
--#include "includes/server-time.lua"
--#include "includes/flow.lua"

local now = serverNowMs(ARGV[6])
local key = KEYS[1]
local maxRate = nil
if ARGV[3] ~= '' then maxRate = tonumber(ARGV[3]) end
local rate = flowRate(flowElapsed(key, now), tonumber(ARGV[1]), tonumber(ARGV[2]), maxRate)
if rate < 0 then
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'tat', string.format('%d', now))
  end
  return { 1, '0', flowNumber(now) }
end
local tat = tonumber(redis.call('HGET', key, 'tat') or '0')
local slot = math.max(tat, now)
local wait = slot - now
if wait > tonumber(ARGV[4]) then
  return { 0, flowNumber(wait), flowNumber(tat) }
end
tat = slot + 1000 / rate
redis.call('HSET', key, 'tat', flowNumber(tat))
redis.call('PEXPIRE', key, tonumber(ARGV[5]))
return { 1, flowNumber(wait), flowNumber(tat) }
