--[[
  One process's limits exchange for a dependency (LimitExchange of src/runtime/limits/store.ts), in this
  order: declare the holder's limits, give back leases (a success after a hold ends probing and starts
  the ramp), renew leases, then take leases in order until the first refusal (takeVerdict of
  src/runtime/limits/limit-maths.ts). Keys: see includes/limits.lua.

  KEYS[1]  D:limits
  KEYS[2]  D:limit-leases
  KEYS[3]  D:limit-costs
  ARGV[1]  TEST ONLY: the time in ms; "" uses the server's TIME
  ARGV[2]  the holder (a process)
  ARGV[3]  leaseMs (whole, >= 1): how long the declaration and the leases taken or renewed live
  ARGV[4]  the holder's maxInFlight, "" for none
  ARGV[5]  the holder's maxRatePerSecond, "" for none
  ARGV[6]  probes (whole, >= 1): units in flight while probing
  ARGV[7]  the ramp's slowStartMs (>= 0)
  ARGV[8]  the ramp's floor per second (> 0)
  ARGV[9]  time to live of the state, ms (> 0)
  ARGV[10] how many leases to give back (g), ARGV[11] how many to renew (r)
  ARGV[12…] g pairs (lease, "1" | "0": its call succeeded), then r leases, then pairs (lease, cost) to take

  Returns  { granted, waitMs (text), refused by ("" | "paused" | "hold" | "in-flight" | "rate"),
             the state: see limitsReply in includes/limits.lua }
]]
--#include "includes/server-time.lua"
--#include "includes/flow.lua"
--#include "includes/limits.lua"

local now = serverNowMs(ARGV[1])
local key, leasesKey, costsKey = KEYS[1], KEYS[2], KEYS[3]
local leaseMs = tonumber(ARGV[3])
local probes = tonumber(ARGV[6])
local slowStartMs, floor = tonumber(ARGV[7]), tonumber(ARGV[8])
local gives, renews = tonumber(ARGV[10]), tonumber(ARGV[11])

local s = limitsLoad(key, now)
local total = limitsPrune(key, leasesKey, costsKey, s, now)

local mine = { f = tonumber(ARGV[4]), r = tonumber(ARGV[5]) }
s.decls[ARGV[2]] = mine
redis.call('HSET', key, 'd:' .. ARGV[2], string.format('%d %s %s', now + leaseMs,
  mine.f and limitsNumber(mine.f) or '-', mine.r and limitsNumber(mine.r) or '-'))

local at = 12
for _ = 1, gives do
  local lease, ok = ARGV[at], ARGV[at + 1]
  at = at + 2
  local cost = redis.call('HGET', costsKey, 'l:' .. lease)
  if cost then
    total = total - tonumber(cost)
    redis.call('HDEL', costsKey, 'l:' .. lease)
    redis.call('ZREM', leasesKey, lease)
  end
  if ok == '1' and s.probing and not limitsHoldLive(s, now) then
    s.probing, s.hold, s.rec, s.tat = false, nil, now, now
    redis.call('HDEL', key, 'probing', 'hold')
    redis.call('HSET', key, 'rec', limitsNumber(now), 'tat', limitsNumber(now))
  end
end
for _ = 1, renews do
  redis.call('ZADD', leasesKey, 'XX', now + leaseMs, ARGV[at])
  at = at + 1
end

local _, effective = limitsEffective(s)
local holdLive = limitsHoldLive(s, now)
local cap = effective.f
if s.probing and not holdLive and (cap == nil or probes < cap) then cap = probes end
local granted, waitMs, refusedBy = 0, 0, ''
local tat = s.tat
while at + 1 <= #ARGV do
  local lease, cost = ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  local held = tonumber(redis.call('HGET', costsKey, 'l:' .. lease) or '0')
  local inFlight = total - held
  if s.override and s.override.paused then
    refusedBy = 'paused'
    if s.override.exp then waitMs = s.override.exp - now end
  elseif holdLive then
    refusedBy, waitMs = 'hold', s.hold.untilMs - now
  elseif cap ~= nil and inFlight > 0 and inFlight + cost > cap then
    refusedBy = 'in-flight'
  else
    local elapsed = nil
    if s.rec then elapsed = now - s.rec end
    local rate = flowRate(elapsed, slowStartMs, floor, effective.r)
    if rate < 0 then
      tat = now
    else
      local slot = math.max(tat, now)
      if slot - now > 0 then
        refusedBy, waitMs = 'rate', slot - now
      else
        tat = slot + 1000 / (rate / cost)
      end
    end
  end
  if refusedBy ~= '' then break end
  total = inFlight + cost
  redis.call('ZADD', leasesKey, now + leaseMs, lease)
  redis.call('HSET', costsKey, 'l:' .. lease, limitsNumber(cost))
  granted = granted + 1
end
if granted > 0 then
  s.tat = tat
  redis.call('HSET', key, 'tat', limitsNumber(tat))
end
limitsSetTotal(costsKey, total)
limitsExpire({ key, leasesKey, costsKey }, s, now, tonumber(ARGV[9]), leaseMs)

local reply = { granted, limitsNumber(waitMs), refusedBy }
for _, value in ipairs(limitsReply(s, now, total)) do table.insert(reply, value) end
return reply
