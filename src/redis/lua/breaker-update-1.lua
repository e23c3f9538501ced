--[[
  breaker-update-1.lua: one operation on one dependency's circuit breaker, applied atomically.
  The same state machine as src/breaker/machine.ts (stepBreaker); the conformance suite in
  src/breaker/store.case.ts holds both to the same behaviour.

  Needs Redis >= 5 (scripts replicate by effects, so reading TIME before a write is allowed).

  KEYS[1]  the dependency's state hash, "{<prefix>:d:<dependency>}:breaker" (one key, one hash slot)

  ARGV[1]  op: "acquire" | "success" | "failure" | "peek" | "successes", or an operator's override:
           "force-open" | "force-closed" | "reset"
  ARGV[2]  TEST ONLY: the time to use, in epoch ms. "" (always, in production) uses the server's TIME,
           so every worker sees the same clock. Tests pass a fake clock's time so one conformance suite
           can drive the memory and the Redis store alike.
  ARGV[3]  the resolved options as JSON: { windowMs, bucketMs, failureRatePpm, minimumVolume,
           consecutiveFailures, coolDownMs, halfOpenProbes, successesToClose, ... }.
           "" is allowed for "peek" only: the options stored by the last write are used (the CLI reads
           breakers this way without knowing their options). An override uses the stored options when
           there are any, and these only for a breaker no worker has written.
  ARGV[4]  optional, default "0": batched successes, a whole number >= 0: successes of calls admitted while
           closed that a worker counted locally. Before "success" / "failure" / "successes" is applied they
           are added to the current bucket and reset the failure streak; they never count as probe
           successes. "successes" applies only them; "acquire" and "peek" ignore them.
  ARGV[5]  optional, default "": for "success" / "failure", the probe ticket "<halfOpenedAtMs>:<seq>" an
           "acquire" returned. Only an outcome whose ticket names a probe of the current half-open period
           still in flight moves a half-open breaker (each ticket counts once); any other outcome is
           counted in the window and changes nothing else.
  ARGV[6]  for an override: { reason, by } as JSON (checked by the caller: reason non-empty). "force-open"
           holds the breaker open (no call, no probe, no half-open of its own) and "force-closed" closed
           (failures counted, never opening it) until a "reset", which lifts the hold and deletes the
           state (a fresh closed breaker). A held breaker's hash does not expire.

  Returns  a JSON string:
           { allowed: bool,        -- acquire: the call may go downstream (false for other ops)
             probe: bool,          -- acquire: the call took a half-open probe slot
             ticket: string,       -- acquire, when probe: the ticket its outcome must carry (else absent)
             transitions: [ { from, to, reason, atMs } ],
             view: { state, successes, failures, volume, consecutiveFailures, probesAdmitted,
                     probeSuccesses, probesInFlight, nowMs, openedAtMs?, halfOpenAtMs?,
                     override?: { state, reason, by, atMs } },
             options: <the options used> | absent when peeking a breaker that has no state }
  Errors   "stormguard-breaker: unknown op <op>", "stormguard-breaker: options are required for <op>",
           "stormguard-breaker: batched successes must be a whole number >= 0".

  Hash fields: st state, cf consecutive failures, oa opened at, ha half-opens at, pa probes admitted,
  ps probe successes, hp when the half-open period began, "p:<seq>" admission time of each probe in
  flight (one presumed lost after coolDownMs is dropped), cfg options JSON, xs / xr / xb / xa the override's
  state, reason, who and when, et when the hash's expiry runs out, "s:<bucket>" / "f:<bucket>" successes
  and failures per window sub-bucket (bucket = floor(now / bucketMs); the last 10 buckets are live).
  A write rewrites the hash (HSET of every field, HDEL of fields it no longer has). An idle breaker
  forgets: a write sets PEXPIRE 2 x (windowMs + coolDownMs) once a quarter of the last one has passed
  (field "et": when it runs out), so the hash lives 1.5 to 2 x (windowMs + coolDownMs) past its last write;
  a held breaker's hash has no expiry (PERSIST).
  "peek", and an "acquire" that admits no probe and changes no state, write nothing.
]]

--#include "includes/server-time.lua"

local BUCKETS = 10
local key, op, timeOverride, optionsJson = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local batched = tonumber(ARGV[4] or '0')
local ticket = ARGV[5] or ''

local overrides = op == 'force-open' or op == 'force-closed' or op == 'reset'
if op ~= 'acquire' and op ~= 'success' and op ~= 'failure' and op ~= 'peek' and op ~= 'successes'
  and not overrides then
  return redis.error_reply('stormguard-breaker: unknown op ' .. tostring(op))
end
if batched == nil or batched < 0 or batched ~= math.floor(batched) then
  return redis.error_reply('stormguard-breaker: batched successes must be a whole number >= 0')
end
local records = op == 'success' or op == 'failure' or op == 'successes'

local now = serverNowMs(timeOverride)

local h = {}
local raw = redis.call('HGETALL', key)
for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end

if optionsJson == '' or (overrides and h.cfg ~= nil) then optionsJson = h.cfg end
if optionsJson == nil then
  if op ~= 'peek' then return redis.error_reply('stormguard-breaker: options are required for ' .. op) end
  return cjson.encode({ allowed = false, probe = false, transitions = {}, view = {
    state = 'closed', successes = 0, failures = 0, volume = 0, consecutiveFailures = 0,
    probesAdmitted = 0, probeSuccesses = 0, probesInFlight = 0, nowMs = now } })
end
local o = cjson.decode(optionsJson)

local function num(v) if v == nil then return nil end return tonumber(v) end
local state = h.st or 'closed'
local cf = num(h.cf) or 0
local openedAt, halfOpenAt, halfOpenedAt = num(h.oa), num(h.ha), num(h.hp)
local admitted, probeOk = num(h.pa) or 0, num(h.ps) or 0
local held = nil -- the operator's override: { state, reason, by, atMs }
if h.xs ~= nil then held = { state = h.xs, reason = h.xr, by = h.xb, atMs = tonumber(h.xa) } end
local inFlight = {} -- seq -> admitted at
for field, value in pairs(h) do
  local seq = string.match(field, '^p:(%d+)$')
  if seq then inFlight[tonumber(seq)] = tonumber(value) end
end
local function countInFlight()
  local n = 0
  for _ in pairs(inFlight) do n = n + 1 end
  return n
end

-- The live window: sub-buckets newer than (current - BUCKETS).
local oldest = math.floor(now / o.bucketMs) - BUCKETS
local buckets, live = {}, 0
for field, value in pairs(h) do
  local kind, idx = string.match(field, '^([sf]):(%-?%d+)$')
  if kind and tonumber(idx) > oldest then
    local b = buckets[idx] or { s = 0, f = 0 }
    b[kind] = tonumber(value)
    if buckets[idx] == nil then live = live + 1 end
    buckets[idx] = b
  end
end
if live == 0 then cf = 0 end -- a failure streak is only as old as the window

local transitions = {}
local function change(to, reason)
  transitions[#transitions + 1] = { from = state, to = to, reason = reason, atMs = now }
  state = to
end
local function endPeriod()
  admitted, probeOk, halfOpenedAt, inFlight = 0, 0, nil, {}
end
local function open(reason)
  change('open', reason)
  openedAt, halfOpenAt = now, now + o.coolDownMs
  endPeriod()
end

if state == 'open' and not (held and held.state == 'open') and now >= (halfOpenAt or 0) then
  change('half-open', 'cool-down-elapsed')
  endPeriod()
  halfOpenedAt = now
end
-- Probes admitted a whole cool-down ago that never reported are presumed lost.
for seq, at in pairs(inFlight) do
  if now >= at + o.coolDownMs then inFlight[seq] = nil end
end

-- Does the outcome carry the ticket of a probe of this half-open period still in flight? It counts once.
local function takeProbe()
  if state ~= 'half-open' or halfOpenedAt == nil then return false end
  local period, seq = string.match(ticket, '^(%-?%d+):(%d+)$')
  if period == nil or tonumber(period) ~= halfOpenedAt then return false end
  seq = tonumber(seq)
  if inFlight[seq] == nil then return false end
  inFlight[seq] = nil
  return true
end

if batched > 0 and records then
  local idx = tostring(math.floor(now / o.bucketMs))
  local b = buckets[idx] or { s = 0, f = 0 }
  b.s = b.s + batched
  buckets[idx] = b
  cf = 0
end

local allowed, probe, issued = false, false, nil
if overrides then
  if op == 'reset' then
    if state ~= 'closed' then change('closed', 'reset') end
    state, cf, openedAt, halfOpenAt, held, buckets = 'closed', 0, nil, nil, nil, {}
    endPeriod()
  else
    local request = cjson.decode(ARGV[6] or '{}')
    local to = op == 'force-open' and 'open' or 'closed'
    if state ~= to then
      change(to, op == 'force-open' and 'forced-open' or 'forced-closed')
      if to == 'open' then openedAt = now end
    end
    endPeriod()
    halfOpenAt = nil
    if to == 'closed' then buckets, cf = {}, 0 end
    held = { state = to, reason = request.reason or '', by = request.by or 'anonymous', atMs = now }
  end
elseif op == 'acquire' then
  if state == 'closed' then
    allowed = true
  elseif state == 'half-open' and countInFlight() < o.halfOpenProbes then
    allowed, probe = true, true
    admitted = admitted + 1
    inFlight[admitted] = now
    issued = string.format('%d:%d', halfOpenedAt or now, admitted)
  end
elseif op == 'success' or op == 'failure' then
  local idx = tostring(math.floor(now / o.bucketMs))
  local b = buckets[idx] or { s = 0, f = 0 }
  if op == 'success' then b.s = b.s + 1 else b.f = b.f + 1 end
  buckets[idx] = b
  local isProbe = takeProbe()
  if op == 'success' then
    cf = 0
    if isProbe then
      probeOk = probeOk + 1
      if probeOk >= o.successesToClose then
        change('closed', 'probes-succeeded')
        buckets, halfOpenAt = {}, nil
        endPeriod()
      end
    end
  else
    cf = cf + 1
    if isProbe then
      open('probe-failed')
    elseif state == 'closed' and not (held and held.state == 'closed') then
      local s, f = 0, 0
      for _, bk in pairs(buckets) do s, f = s + bk.s, f + bk.f end
      if cf >= o.consecutiveFailures then
        open('consecutive-failures')
      elseif s + f >= o.minimumVolume and f * 1000000 >= o.failureRatePpm * (s + f) then
        open('failure-rate')
      end
    end
  end
end

local successes, failures = 0, 0
for _, bk in pairs(buckets) do successes, failures = successes + bk.s, failures + bk.f end

-- The hot path, acquire on a closed breaker, changes nothing worth storing: it stays a pure read (the
-- stale buckets it would prune are pruned by every read anyway).
if op == 'reset' then
  redis.call('DEL', key)
elseif records or overrides or (op == 'acquire' and (probe or #transitions > 0)) then
  local fields = { 'st', state, 'cf', cf, 'pa', admitted, 'ps', probeOk, 'cfg', optionsJson }
  local function put(name, value)
    if value ~= nil then fields[#fields + 1] = name; fields[#fields + 1] = value end
  end
  put('oa', openedAt)
  put('ha', halfOpenAt)
  put('hp', halfOpenedAt)
  for seq, at in pairs(inFlight) do put('p:' .. seq, at) end
  for idx, bk in pairs(buckets) do
    if bk.s > 0 then put('s:' .. idx, bk.s) end
    if bk.f > 0 then put('f:' .. idx, bk.f) end
  end
  if held then
    put('xs', held.state)
    put('xr', held.reason)
    put('xb', held.by)
    put('xa', held.atMs)
  end
  -- The expiry: an idle breaker forgets 2 x (windowMs + coolDownMs) after the write that last set it,
  -- renewed once a quarter of that has passed (or the options ask for more), so most writes leave it be
  -- and a breaker never forgets sooner than 1.5 x (windowMs + coolDownMs) after its last write. "et" keeps
  -- when it runs out, on the script's clock. An operator's hold lasts until a reset lifts it: no expiry.
  local ttl, expiresAt = 2 * (o.windowMs + o.coolDownMs), num(h.et)
  local renew = held == nil and (expiresAt == nil or expiresAt - now < ttl * 3 / 4)
  if renew then
    put('et', now + ttl)
  elseif held == nil then
    put('et', expiresAt)
  end
  -- The hash becomes exactly `fields`: what it held and no longer should is deleted (usually nothing).
  local keep, gone = {}, {}
  for i = 1, #fields, 2 do keep[fields[i]] = true end
  for field in pairs(h) do
    if not keep[field] then gone[#gone + 1] = field end
  end
  if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
  redis.call('HSET', key, unpack(fields))
  if renew then
    redis.call('PEXPIRE', key, ttl)
  elseif held and expiresAt ~= nil then
    redis.call('PERSIST', key)
  end
end

local view = {
  state = state, successes = successes, failures = failures, volume = successes + failures,
  consecutiveFailures = cf, probesAdmitted = admitted, probeSuccesses = probeOk,
  probesInFlight = countInFlight(), nowMs = now,
  openedAtMs = openedAt,
}
if state ~= 'closed' then view.halfOpenAtMs = halfOpenAt end
if held then view.override = held end
return cjson.encode({ allowed = allowed, probe = probe, ticket = issued, transitions = transitions, view = view,
  options = o })
