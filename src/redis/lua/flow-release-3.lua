--[[
  Takes, oldest first, up to max parked jobs whose ramp slots start within the horizon (paceMany() in
  src/runtime/flow-control/pacing.ts), and marks each released.

  KEYS[1]  D:flow
  KEYS[2]  D:park:<queue>
  KEYS[3]  D:released:<queue>
  ARGV[1]  slowStartMs (>= 0)
  ARGV[2]  floor, attempts per second (> 0)
  ARGV[3]  maxRatePerSecond, "" for none
  ARGV[4]  max (>= 0)
  ARGV[5]  horizonMs (>= 0)
  ARGV[6]  time to live of the state and of the released marks, ms (> 0)
  ARGV[7]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  the job ids taken, in order
]]
--#include "includes/server-time.lua"
--#include "includes/flow.lua"

local now = serverNowMs(ARGV[7])
local flowKey, parkKey, releasedKey = KEYS[1], KEYS[2], KEYS[3]
local available = math.min(tonumber(ARGV[4]), redis.call('LLEN', parkKey))
if available <= 0 then
  return {}
end
local maxRate = nil
if ARGV[3] ~= '' then maxRate = tonumber(ARGV[3]) end
local rate = flowRate(flowElapsed(flowKey, now), tonumber(ARGV[1]), tonumber(ARGV[2]), maxRate)
local horizon = tonumber(ARGV[5])
local granted = available
local tat = now
if rate >= 0 then
  tat = tonumber(redis.call('HGET', flowKey, 'tat') or '0')
  granted = 0
  while granted < available do
    local slot = math.max(tat, now)
    local wait = slot - now
    if wait > horizon or (wait >= horizon and horizon > 0) then break end
    tat = slot + 1000 / rate
    granted = granted + 1
  end
end
if granted == 0 then
  return {}
end
-- One LPOP per id: LPOP with a count needs Redis 6.2.
local ids = {}
for i = 1, granted do
  ids[i] = redis.call('LPOP', parkKey)
end
if rate >= 0 then
  redis.call('HSET', flowKey, 'tat', flowNumber(tat))
  redis.call('PEXPIRE', flowKey, tonumber(ARGV[6]))
end
redis.call('SADD', releasedKey, unpack(ids))
redis.call('PEXPIRE', releasedKey, tonumber(ARGV[6]))
return ids
