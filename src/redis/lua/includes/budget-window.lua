-- Shared by the budget scripts: the sliding-window arithmetic of src/budget/window.ts, in integers only.
--
-- A dependency's budget is one hash, KEYS[1] = "{<prefix>:<dependency>}:budget", holding:
--   b<slot>  "<bucketIndex>:<successes>:<spent>:<denied>" for slot = bucketIndex mod (buckets + 1)
--   cfg      "<bucketMs>:<buckets>:<ratioPpm>:<minAllowance>", the settings last used (read by the CLI)
-- A slot still holding an older bucket index is stale: it is ignored when summing and reset when written.

local PPM = 1000000

-- Milliseconds from the Redis server's clock, or the test-only override when one is given.
local function budgetNow(override)
  if override ~= nil and override ~= '' then
    return tonumber(override)
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

-- Sums the window (now - buckets * bucketMs, now]: whole buckets, plus the oldest one weighted by the part
-- of it still inside the window (successes and denials rounded down, spend rounded up). Also returns the
-- current bucket's slot and counts, emptied if the slot is stale or the bucket geometry changed.
local function budgetRead(key, now, bucketMs, buckets)
  local slots = buckets + 1
  local fields = { 'cfg' }
  for k = 0, buckets do
    fields[k + 2] = 'b' .. k
  end
  local raw = redis.call('HMGET', key, unpack(fields))
  local w = { successes = 0, spent = 0, denied = 0, reset = false }
  local cfgBucketMs, cfgBuckets = nil, nil
  if raw[1] then
    cfgBucketMs, cfgBuckets = string.match(raw[1], '^(%d+):(%d+):')
    w.reset = tonumber(cfgBucketMs) ~= bucketMs or tonumber(cfgBuckets) ~= buckets
  end
  local current = intDiv(now, bucketMs)
  local overlap = bucketMs - math.fmod(now, bucketMs)
  w.current = current
  w.slot = math.fmod(current, slots)
  w.s, w.g, w.d = 0, 0, 0
  if w.reset then
    return w
  end
  local oldS, oldG, oldD = 0, 0, 0
  for k = 0, buckets do
    local value = raw[k + 2]
    if value then
      local i, s, g, d = string.match(value, '^(%d+):(%d+):(%d+):(%d+)$')
      local age = current - tonumber(i)
      s, g, d = tonumber(s), tonumber(g), tonumber(d)
      if age >= 0 and age < buckets then
        w.successes = w.successes + s
        w.spent = w.spent + g
        w.denied = w.denied + d
        if age == 0 then
          w.s, w.g, w.d = s, g, d
        end
      elseif age == buckets then
        oldS, oldG, oldD = s, g, d
      end
    end
  end
  w.successes = w.successes + intDiv(oldS * overlap, bucketMs)
  w.spent = w.spent + intDiv(oldG * overlap + bucketMs - 1, bucketMs)
  w.denied = w.denied + intDiv(oldD * overlap, bucketMs)
  return w
end

-- Writes the current bucket's counts and the settings, and lets the whole hash expire on its own.
local function budgetWrite(key, w, bucketMs, buckets, ratioPpm, minAllowance, ttlMs)
  if w.reset then
    redis.call('DEL', key)
  end
  redis.call('HSET', key, 'b' .. w.slot, w.current .. ':' .. w.s .. ':' .. w.g .. ':' .. w.d,
    'cfg', bucketMs .. ':' .. buckets .. ':' .. ratioPpm .. ':' .. minAllowance)
  redis.call('PEXPIRE', key, ttlMs)
end
