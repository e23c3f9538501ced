--[[
  Holds a dependency (holdLimits of src/runtime/limits/store.ts: a longer hold already set wins; probing
  starts when it ends), or sets or removes the operator's override (overrideLimits: with clearHold, the
  hold, probing and the ramp go too). Keys: see includes/limits.lua.

  KEYS[1]  D:limits
  KEYS[2]  D:limit-leases
  KEYS[3]  D:limit-costs
  ARGV[1]  TEST ONLY: the time in ms; "" uses the server's TIME
  ARGV[2]  time to live of the state, ms (> 0)
  ARGV[3]  "hold" | "override"
  hold:     ARGV[4] how long, ms (whole, >= 1); ARGV[5] the reason
  override: ARGV[4] the override's JSON without its times, "" to remove it; ARGV[5] expires in ms, ""
            for never; ARGV[6] "1" to clear the hold, probing and the ramp

  Returns  the state: see limitsReply in includes/limits.lua
]]
--#include "includes/server-time.lua"
--#include "includes/limits.lua"

local now = serverNowMs(ARGV[1])
local key, leasesKey, costsKey = KEYS[1], KEYS[2], KEYS[3]
local s = limitsLoad(key, now)
local total = limitsPrune(key, leasesKey, costsKey, s, now)

if ARGV[3] == 'hold' then
  local untilMs = now + tonumber(ARGV[4])
  if not limitsHoldLive(s, now) or s.hold.untilMs < untilMs then
    s.hold = { untilMs = untilMs, setAt = now, reason = ARGV[5] }
    s.probing = true
    redis.call('HSET', key, 'hold', string.format('%d %d %s', untilMs, now, ARGV[5]), 'probing', '1')
  end
else
  if ARGV[4] == '' then
    s.override = nil
    redis.call('HDEL', key, 'override', 'ovset', 'ovexp')
  else
    local o = cjson.decode(ARGV[4])
    s.override = { text = ARGV[4], set = now, paused = o.paused == true }
    if type(o.maxInFlight) == 'number' then s.override.f = o.maxInFlight end
    if type(o.maxRatePerSecond) == 'number' then s.override.r = o.maxRatePerSecond end
    redis.call('HSET', key, 'override', ARGV[4], 'ovset', string.format('%d', now))
    if ARGV[5] == '' then
      redis.call('HDEL', key, 'ovexp')
    else
      s.override.exp = now + tonumber(ARGV[5])
      redis.call('HSET', key, 'ovexp', string.format('%d', s.override.exp))
    end
  end
  if ARGV[6] == '1' then
    s.hold, s.probing, s.rec = nil, false, nil
    redis.call('HDEL', key, 'hold', 'probing', 'rec')
  end
end
limitsSetTotal(costsKey, total)
limitsExpire({ key, leasesKey, costsKey }, s, now, tonumber(ARGV[2]), 0)
return limitsReply(s, now, total)
