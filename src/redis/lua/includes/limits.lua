-- Shared by the limits scripts (src/redis/flow-store.ts). A dependency's limits are three keys in its hash
-- tag "{<prefix>:d:<dependency>}" (one Redis Cluster slot):
--   D:limits        hash  tat (the pacer's theoretical arrival time, ms, fractional), rec (came out of
--                         a hold at, ms), probing ("1" from a hold until the first success after it), hold
--                         ("<until ms> <set at ms> <reason>"), override (the override's JSON without its
--                         times), ovset / ovexp (its set and expiry times, ms; no ovexp: until reset), and
--                         "d:<holder>" per declaring process: "<expires at ms> <maxInFlight> <maxRate>", "-"
--                         for a field it leaves unset
--   D:limit-leases  zset  lease id -> expires at ms
--   D:limit-costs   hash  "l:<lease id>" -> cost units; total -> the sum over the zset's members
-- Expired declarations, leases and overrides read as absent; writes drop them. The maths is
-- src/runtime/limits/limit-maths.ts (with includes/flow.lua's flowRate as slowStartRate).

local function limitsNumber(value)
  return string.format('%.17g', value)
end

local function limitsField(text)
  if text == '-' then return nil end
  return tonumber(text)
end

-- The dependency's limits hash, parsed: live declarations by holder, the fields of expired ones, the
-- live override (nil when none or expired: overrideExpired says which), the hold record (live or not),
-- probing, rec and tat.
local function limitsLoad(key, now)
  local s = { decls = {}, expiredDecls = {}, probing = false, tat = 0 }
  local all = redis.call('HGETALL', key)
  local ovText, ovSet, ovExp
  for i = 1, #all, 2 do
    local field, value = all[i], all[i + 1]
    if string.sub(field, 1, 2) == 'd:' then
      local exp, f, r = string.match(value, '^(%S+) (%S+) (%S+)$')
      if exp and tonumber(exp) > now then
        s.decls[string.sub(field, 3)] = { f = limitsField(f), r = limitsField(r) }
      else
        table.insert(s.expiredDecls, field)
      end
    elseif field == 'tat' then s.tat = tonumber(value)
    elseif field == 'rec' then s.rec = tonumber(value)
    elseif field == 'probing' then s.probing = true
    elseif field == 'hold' then
      local untilMs, setAt, reason = string.match(value, '^(%S+) (%S+) (.*)$')
      if untilMs then s.hold = { untilMs = tonumber(untilMs), setAt = tonumber(setAt), reason = reason } end
    elseif field == 'override' then ovText = value
    elseif field == 'ovset' then ovSet = tonumber(value)
    elseif field == 'ovexp' then ovExp = tonumber(value)
    end
  end
  if ovText then
    if ovExp == nil or ovExp > now then
      local o = cjson.decode(ovText)
      s.override = { text = ovText, set = ovSet or 0, exp = ovExp, paused = o.paused == true }
      if type(o.maxInFlight) == 'number' then s.override.f = o.maxInFlight end
      if type(o.maxRatePerSecond) == 'number' then s.override.r = o.maxRatePerSecond end
    else
      s.overrideExpired = true
    end
  end
  return s
end

local function limitsHoldLive(s, now)
  return s.hold ~= nil and s.hold.untilMs > now
end

-- The lowest of each field over the live declarations, and what is enforced (the override's fields
-- where it sets them).
local function limitsEffective(s)
  local declared = {}
  for _, d in pairs(s.decls) do
    if d.f and (declared.f == nil or d.f < declared.f) then declared.f = d.f end
    if d.r and (declared.r == nil or d.r < declared.r) then declared.r = d.r end
  end
  local effective = { f = declared.f, r = declared.r }
  if s.override then
    if s.override.f then effective.f = s.override.f end
    if s.override.r then effective.r = s.override.r end
  end
  return declared, effective
end

-- Cost units held by live leases, without writing: the total less what has expired and is not pruned yet.
local function limitsInFlight(leasesKey, costsKey, now)
  local total = tonumber(redis.call('HGET', costsKey, 'total') or '0')
  local expired = redis.call('ZRANGEBYSCORE', leasesKey, '-inf', now)
  for _, lease in ipairs(expired) do
    total = total - tonumber(redis.call('HGET', costsKey, 'l:' .. lease) or '0')
  end
  if total < 0 then total = 0 end
  return total
end

-- Drops expired leases (their costs leave the total), declarations and the override; returns the total.
local function limitsPrune(key, leasesKey, costsKey, s, now)
  local total = tonumber(redis.call('HGET', costsKey, 'total') or '0')
  local expired = redis.call('ZRANGEBYSCORE', leasesKey, '-inf', now)
  for _, lease in ipairs(expired) do
    total = total - tonumber(redis.call('HGET', costsKey, 'l:' .. lease) or '0')
    redis.call('HDEL', costsKey, 'l:' .. lease)
  end
  if #expired > 0 then redis.call('ZREMRANGEBYSCORE', leasesKey, '-inf', now) end
  for _, field in ipairs(s.expiredDecls) do redis.call('HDEL', key, field) end
  if s.overrideExpired then redis.call('HDEL', key, 'override', 'ovset', 'ovexp') end
  if total < 0 then total = 0 end
  return total
end

local function limitsSetTotal(costsKey, total)
  if total > 0 then
    redis.call('HSET', costsKey, 'total', limitsNumber(total))
  else
    redis.call('HDEL', costsKey, 'total')
  end
end

-- Every key lives at least stateTtl past this write, and as long as what it holds: an override without
-- an expiry keeps the keys until it is removed.
local function limitsExpire(keys, s, now, stateTtl, leaseMs)
  local ttl = math.max(stateTtl, leaseMs)
  if s.hold then ttl = math.max(ttl, s.hold.untilMs - now + stateTtl) end
  for _, key in ipairs(keys) do
    if s.override and s.override.exp == nil then
      redis.call('PERSIST', key)
    elseif s.override then
      redis.call('PEXPIRE', key, math.max(ttl, s.override.exp - now))
    else
      redis.call('PEXPIRE', key, ttl)
    end
  end
end

-- The state as the store's reply carries it (src/redis/flow-store.ts reads it): now, in flight, declared
-- maxInFlight and maxRate, the override's JSON, set and expiry times, the live hold, probing (0 | 1),
-- rec, and 1 when anything lives (a declaration, a lease, the override or the hold). "" for unset.
local function limitsReply(s, now, inFlight)
  local declared = limitsEffective(s)
  local reply = { limitsNumber(now), limitsNumber(inFlight), '', '', '', '', '', '', 0, '', 0 }
  if declared.f then reply[3] = limitsNumber(declared.f) end
  if declared.r then reply[4] = limitsNumber(declared.r) end
  local live = inFlight > 0 or next(s.decls) ~= nil or s.override ~= nil
  if s.override then
    reply[5] = s.override.text
    reply[6] = limitsNumber(s.override.set)
    if s.override.exp then reply[7] = limitsNumber(s.override.exp) end
  end
  if limitsHoldLive(s, now) then
    reply[8] = limitsNumber(s.hold.untilMs) .. ' ' .. limitsNumber(s.hold.setAt) .. ' ' .. s.hold.reason
    live = true
  elseif s.probing then
    reply[9] = 1
  end
  if s.rec then reply[10] = limitsNumber(s.rec) end
  if live then reply[11] = 1 end
  return reply
end
