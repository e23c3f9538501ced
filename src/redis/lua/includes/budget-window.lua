-- Shared by the budget scripts: the sliding-window arithmetic of src/budget/window.ts, in integers only.
--
-- A dependency's budget is one string key, KEYS[1] = "{<prefix>:d:<dependency>}:budget", holding a
-- MessagePack array (one GET, one SET: no number-to-string conversions, no per-field commands):
--   [1] format version (1)   [2] bucketMs   [3] buckets   [4] ratioPpm   [5] minAllowance
--        (the settings last used; [4] and [5] are read by the CLI)
--   [6] t, the newest bucket index written (bucket index = floor(time / bucketMs))
--   [7] S  [8] G  [9] D      successes, spent (granted) and denied summed over the ring
--   [10 + 3k], [11 + 3k], [12 + 3k]   successes, spent, denied of ring slot k = bucketIndex mod (buckets + 1)
-- The ring always holds buckets t - buckets .. t: a slot is retired (subtracted from the totals and
-- emptied) before it is reused for a newer bucket.

local PPM = 1000000
local FIRST_SLOT = 10

-- Milliseconds from the Redis server's clock, or the test-only override when one is given.
local function budgetNow(override)
  if override ~= nil and override ~= '' then
    return tonumber(override)
  end
  -- Before Redis 5 a script must opt in to effects replication to write after reading TIME.
  if redis.replicate_commands then
    redis.replicate_commands()
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- floor(a / b) for non-negative integers, exact (fmod is exact where a float division may round up).
local function intDiv(a, b)
  return (a - math.fmod(a, b)) / b
end

local function budgetAllowance(successes, ratioPpm, minAllowance)
  local earned = intDiv(successes * ratioPpm, PPM)
  if earned > minAllowance then
    return earned
  end
  return minAllowance
end

-- The stored array, or nil when the key is missing.
local function budgetDecode(key)
  local raw = redis.call('GET', key)
  if not raw then
    return nil
  end
  return cmsgpack.unpack(raw)
end

-- Brings the ring `r` (or a new one, when it is nil or has another bucket geometry) to time `now`, in
-- memory: slots of buckets that fell out of the ring are retired. Time never goes backwards for a
-- dependency: an earlier time counts as the start of the newest bucket seen. Returns the window: the
-- current slot's index in `r`, and the sums of whole buckets plus the oldest one weighted by the part of
-- it still inside the window (successes and denials rounded down, spend rounded up).
local function budgetAdvance(r, now, bucketMs, buckets)
  local slots = buckets + 1
  local current = intDiv(now, bucketMs)
  local overlap = bucketMs - math.fmod(now, bucketMs)
  if not r or r[2] ~= bucketMs or r[3] ~= buckets then
    r = { 1, bucketMs, buckets, 0, 0, current, 0, 0, 0 }
    for i = FIRST_SLOT, FIRST_SLOT + 3 * slots - 1 do
      r[i] = 0
    end
  end
  local last = r[6]
  if current < last then
    current, overlap = last, bucketMs
  end
  if current - last >= slots then
    for i = 7, FIRST_SLOT + 3 * slots - 1 do
      r[i] = 0
    end
  else
    for j = last + 1, current do
      local i = FIRST_SLOT + 3 * math.fmod(j, slots)
      r[7], r[8], r[9] = r[7] - r[i], r[8] - r[i + 1], r[9] - r[i + 2]
      r[i], r[i + 1], r[i + 2] = 0, 0, 0
    end
  end
  r[6] = current
  local old = FIRST_SLOT + 3 * math.fmod(current + 1, slots)
  return {
    r = r,
    cur = FIRST_SLOT + 3 * math.fmod(current, slots),
    successes = r[7] - r[old] + intDiv(r[old] * overlap, bucketMs),
    spent = r[8] - r[old + 1] + intDiv(r[old + 1] * overlap + bucketMs - 1, bucketMs),
    denied = r[9] - r[old + 2] + intDiv(r[old + 2] * overlap, bucketMs),
  }
end

-- Stores the ring with the caller's settings; the key expires on its own `ttlMs` after this write.
local function budgetSave(key, r, ratioPpm, minAllowance, ttlMs)
  r[4], r[5] = ratioPpm, minAllowance
  redis.call('SET', key, cmsgpack.pack(r), 'PX', ttlMs)
end
