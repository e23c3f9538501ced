-- Shared by the budget scripts: the rules and arithmetic of src/budget/window.ts (and its TypeScript
-- implementation, src/budget/ring.ts and dependency-state.ts), line for line, in integers only.
--
-- A dependency's budget is one string key, KEYS[1] = "{<prefix>:d:<dependency>}:budget", holding a
-- MessagePack map (one GET, one SET per script):
--   f   format version (2)
--   g   the governing settings {bucketMs, buckets, ratioPpm, minAllowance, version}
--   r   their ring: {last, then per slot k = 0 .. buckets: bucketIndex, successes, spent, denied}
--       (slot k holds bucket index ≡ k mod buckets + 1; last is the newest bucket index written, -1 none)
--   p, pr, ps   while a change is pending: its settings, its ring, and the bucket its ring started in
-- A key that does not decode to that shape (written by hand, by another version, or of another type) is
-- reported and replaced by fresh state: it affects its own dependency only.

-- Library functions as locals: a global lookup costs about as much as the call itself in a script.
local fmod, type, pcall = math.fmod, type, pcall

local PPM = 1000000
local MAX_COUNT = 9007199254740991
local FORMAT = 2

-- floor(a / b) for non-negative integers, exact (fmod is exact where a float division may round up).
local function intDiv(a, b)
  return (a - fmod(a, b)) / b
end

-- floor(a * b / d), exact for 0 <= a <= 2^53 - 1, 0 <= b <= d <= 9e7: every product stays below 2^53.
local function mulDiv(a, b, d)
  local r = fmod(a, d)
  return ((a - r) / d) * b + intDiv(r * b, d)
end

-- a + b, saturating at MAX_COUNT.
local function addCount(a, b)
  local s = a + b
  if s > MAX_COUNT then
    return MAX_COUNT
  end
  return s
end

-- A count for a reply: Redis turns a Lua number into an integer reply exactly only below 2^51, and
-- counts go up to 2^53 - 1, so a count from 2^51 up is sent as text ('%.0f' prints every such integer
-- exactly). Readers take either (Number() in the store).
local EXACT_REPLY = 2251799813685248
local function countText(n)
  if n < EXACT_REPLY then
    return n
  end
  return string.format('%.0f', n)
end

local function budgetAllowance(successes, ratioPpm, minAllowance)
  local earned = mulDiv(successes, ratioPpm, PPM)
  if earned > minAllowance then
    return earned
  end
  return minAllowance
end

local function sameSettings(a, b)
  for i = 1, 5 do
    if a[i] ~= b[i] then
      return false
    end
  end
  return true
end

local function newRing(settings)
  local ring = { -1 }
  for k = 0, settings[2] do
    local i = 2 + 4 * k
    ring[i], ring[i + 1], ring[i + 2], ring[i + 3] = -1, 0, 0, 0
  end
  return ring
end

-- The bucket a write at `now` goes to: never older than the newest written.
local function currentAt(ring, settings, now)
  local c = intDiv(now, settings[1])
  if ring[1] > c then
    return ring[1]
  end
  return c
end

-- The index in `ring` of bucket `bucket`'s slot, emptied first if it still holds an older bucket.
local function slotOf(ring, settings, bucket)
  local i = 2 + 4 * fmod(bucket, settings[2] + 1)
  if ring[i] ~= bucket then
    ring[i], ring[i + 1], ring[i + 2], ring[i + 3] = bucket, 0, 0, 0
  end
  return i
end

-- Adds aged successes {age1, count1, age2, count2, ...}: stamped now - age; dropped when older than the
-- oldest bucket the ring keeps.
local function addAged(ring, settings, aged, now, current)
  for j = 1, #aged, 2 do
    local t = now - aged[j]
    if t < 0 then
      t = 0
    end
    local bucket = intDiv(t, settings[1])
    if bucket > current then
      bucket = current
    end
    if current - bucket <= settings[2] then
      local i = slotOf(ring, settings, bucket)
      ring[i + 1] = addCount(ring[i + 1], aged[j + 1])
    end
  end
end

-- The window's sums at `now`: successes and denials of the newest `buckets` buckets plus the oldest
-- weighted by its overlap (rounded down); spend of all buckets + 1, the oldest counted whole. Every count
-- it reads is checked on the way (a malformed one raises an error: the callers run it under pcall).
local function ringSums(ring, settings, now, current)
  local bucketMs, buckets = settings[1], settings[2]
  local s, g, d, oldS, oldD = 0, 0, 0, 0, 0
  local i = 2
  for _ = 0, buckets do
    local a, b, c = ring[i + 1], ring[i + 2], ring[i + 3]
    if
      not (
        a >= 0
        and a <= MAX_COUNT
        and a % 1 == 0
        and b >= 0
        and b <= MAX_COUNT
        and b % 1 == 0
        and c >= 0
        and c <= MAX_COUNT
        and c % 1 == 0
      )
    then
      error('malformed counts')
    end
    local age = current - ring[i]
    if age >= 0 and age <= buckets then
      -- Plain sums, saturated once below: the counts are whole and >= 0, so a sum is exact while it stays
      -- at most 2^53 - 1 and at least 2^53 once it passes it (the same as saturating every addition).
      g = g + b
      if age < buckets then
        s, d = s + a, d + c
      else
        oldS, oldD = a, c
      end
    end
    i = i + 4
  end
  s, g, d = addCount(s, 0), addCount(g, 0), addCount(d, 0)
  -- An earlier time than the newest bucket counts as that bucket's start: the oldest bucket counts whole.
  local overlap = bucketMs - fmod(now, bucketMs)
  if current > intDiv(now, bucketMs) then
    overlap = bucketMs
  end
  return addCount(s, mulDiv(oldS, overlap, bucketMs)), g, addCount(d, mulDiv(oldD, overlap, bucketMs))
end

local function isCount(v)
  return type(v) == 'number' and v % 1 == 0 and v >= -1 and v <= MAX_COUNT
end

-- The ring's shape; its counts are checked as ringSums reads them.
local function validRing(ring, settings)
  return type(ring) == 'table' and #ring == 1 + 4 * (settings[2] + 1) and isCount(ring[1])
end

local function validSettings(x)
  if type(x) ~= 'table' or #x ~= 5 then
    return false
  end
  for i = 1, 5 do
    if not isCount(x[i]) or x[i] < 0 then
      return false
    end
  end
  return x[1] >= 1 and x[1] <= 86400000 and x[2] >= 1 and x[2] <= 1000 and x[3] <= PPM
end


-- The stored state; nil when the key is missing; nil and what is wrong when it cannot be read.
local function budgetDecode(key)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'table' and raw.err then
    return nil, 'the key holds a ' .. redis.call('TYPE', key).ok .. ', not a string'
  end
  if not raw then
    return nil
  end
  local ok, st = pcall(cmsgpack.unpack, raw)
  if not ok or type(st) ~= 'table' then
    return nil, 'not MessagePack'
  end
  if st.f ~= FORMAT then
    return nil, 'not budget state of format ' .. FORMAT
  end
  if not validSettings(st.g) or not validRing(st.r, st.g) then
    return nil, 'malformed settings or counts'
  end
  if st.p ~= nil and (not validSettings(st.p) or not validRing(st.pr, st.p) or not isCount(st.ps)) then
    return nil, 'malformed pending settings'
  end
  return st
end

-- True when the pending settings' ring holds a whole window of its own.
local function pendingDue(st, now)
  return st.p ~= nil and currentAt(st.pr, st.p, now) - st.ps >= st.p[2] + 1
end

-- A fresh state governed by `settings`.
local function budgetFresh(settings)
  return { f = FORMAT, g = settings, r = newRing(settings) }
end

-- The rings of `st` at `now`, governing first: a due pending change alone (the view of a read), else the
-- governing one and the pending one.
local function budgetRings(st, now, viewOnly)
  if viewOnly and pendingDue(st, now) then
    return { st.pr }, { st.p }
  end
  if st.p ~= nil then
    return { st.r, st.pr }, { st.g, st.p }
  end
  return { st.r }, { st.g }
end

-- The governing ring's successes, spent, denied and allowance at `now`, and the room every ring leaves
-- (the least allowance - spent). `currents[n]` is ring n's current bucket.
local function budgetView(rings, settings, now, currents)
  local room, gs, gg, gd, ga = nil, 0, 0, 0, 0
  for n = 1, #rings do
    local s, g, d = ringSums(rings[n], settings[n], now, currents[n])
    local allowance = budgetAllowance(s, settings[n][3], settings[n][4])
    local left = allowance - g
    if left < 0 then
      left = 0
    end
    if room == nil or left < room then
      room = left
    end
    if n == 1 then
      gs, gg, gd, ga = s, g, d, allowance
    end
  end
  return gs, gg, gd, ga, room
end

-- The 16 entries both scripts reply with: `first`, the four counts (as text), the governing settings,
-- and the pending flag and settings (0s when none).
local function budgetReply(first, allowance, spent, denied, successes, settings)
  local reply = { first, countText(allowance), countText(spent), countText(denied), countText(successes) }
  for i = 1, 5 do
    reply[5 + i] = settings[1][i]
    reply[11 + i] = settings[2] and settings[2][i] or 0
  end
  reply[11] = settings[2] and 1 or 0
  return reply
end

-- Applies the caller's settings to `st` (window.ts: promote a due change, then let a higher version start
-- one), adds the aged successes, decides `count` retries and records them in every ring, in memory.
-- Returns the first 16 entries of budget-spend-1.lua's reply. Raises an error on malformed counts.
local function budgetApply(st, caller, aged, count, now)
  if pendingDue(st, now) then
    st.g, st.r, st.p, st.pr, st.ps = st.p, st.pr, nil, nil, nil
  end
  if not sameSettings(caller, st.g) and caller[5] > st.g[5] and (st.p == nil or caller[5] > st.p[5]) then
    st.p, st.pr = caller, newRing(caller)
    st.ps = currentAt(st.pr, caller, now)
  end
  local rings, settings = budgetRings(st, now, false)
  local currents = {}
  for n = 1, #rings do
    currents[n] = currentAt(rings[n], settings[n], now)
    rings[n][1] = currents[n]
    addAged(rings[n], settings[n], aged, now, currents[n])
  end
  local gs, gg, gd, ga, room = budgetView(rings, settings, now, currents)
  local granted = count
  if room < granted then
    granted = room
  end
  for n = 1, #rings do
    local i = slotOf(rings[n], settings[n], currents[n])
    rings[n][i + 2] = addCount(rings[n][i + 2], granted)
    rings[n][i + 3] = addCount(rings[n][i + 3], count - granted)
  end
  if gg + room < ga then
    ga = gg + room
  end
  return budgetReply(countText(granted), ga, addCount(gg, granted), addCount(gd, count - granted), gs, settings)
end

-- budgetApply on the stored state, saved with its time to live (two windows of the longer settings). A
-- state that cannot be read, or whose counts turn out malformed, is replaced by fresh state; the reply's
-- last entry says what was wrong ("" when nothing was). Returns the reply of budget-spend-1.lua: its first
-- five entries alone when the caller's settings govern with none pending and nothing was reset.
local function budgetWrite(key, caller, aged, count, now)
  local st, problem = budgetDecode(key)
  st = st or budgetFresh(caller)
  local ok, reply = pcall(budgetApply, st, caller, aged, count, now)
  if not ok then
    problem = 'malformed counts'
    st = budgetFresh(caller)
    reply = budgetApply(st, caller, aged, count, now)
  end
  local ttl = 2 * st.g[1] * st.g[2]
  if st.p ~= nil and 2 * st.p[1] * st.p[2] > ttl then
    ttl = 2 * st.p[1] * st.p[2]
  end
  redis.call('SET', key, cmsgpack.pack(st), 'PX', ttl)
  -- The caller's settings govern, none pending, nothing reset: the counts say it all (the usual reply).
  if problem == nil and st.p == nil and sameSettings(st.g, caller) then
    return { reply[1], reply[2], reply[3], reply[4], reply[5] }
  end
  reply[17] = problem or ''
  return reply
end
