--[[
  Reads a dependency's budget without changing it (no write, no expiry extended).

  KEYS[1]  "{<prefix>:<dependency>}:budget"  the dependency's hash (see includes/budget-window.lua)

  ARGV[1]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)
  ARGV[2]  bucketMs       optional: the reader's settings (ARGV[2..5], all or none); without them the
  ARGV[3]  buckets          settings stored by the last writer are used
  ARGV[4]  ratioPpm
  ARGV[5]  minAllowance

  Returns {0} when the hash does not exist (or holds another bucket geometry than the one given), else
  {1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance}.
]]
--@include budget-window

local key = KEYS[1]
local now = budgetNow(ARGV[1])
local cfg = redis.call('HGET', key, 'cfg')
if not cfg then
  return { 0 }
end
local a, b, c, d = string.match(cfg, '^(%d+):(%d+):(%d+):(%d+)$')
local bucketMs, buckets = tonumber(a), tonumber(b)
local ratioPpm, minAllowance = tonumber(c), tonumber(d)
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  if tonumber(ARGV[2]) ~= bucketMs or tonumber(ARGV[3]) ~= buckets then
    return { 0 }
  end
  ratioPpm, minAllowance = tonumber(ARGV[4]), tonumber(ARGV[5])
end

-- Sum the ring as it stands; slot k holds bucket last - ((last - k) mod slots).
local slots = buckets + 1
local last = tonumber(redis.call('HGET', key, 't'))
if not last then
  return { 0 }
end
local current = intDiv(now, bucketMs)
local overlap = bucketMs - math.fmod(now, bucketMs)
if current < last then
  current, overlap = last, bucketMs
end
local fields = {}
for k = 0, buckets do
  fields[#fields + 1] = 's' .. k
  fields[#fields + 1] = 'g' .. k
  fields[#fields + 1] = 'd' .. k
end
local raw = redis.call('HMGET', key, unpack(fields))
local successes, spent, denied = 0, 0, 0
for k = 0, buckets do
  local age = current - (last - math.fmod(last - k, slots))
  local s, g, dd = tonumber(raw[3 * k + 1]) or 0, tonumber(raw[3 * k + 2]) or 0, tonumber(raw[3 * k + 3]) or 0
  if age >= 0 and age < buckets then
    successes, spent, denied = successes + s, spent + g, denied + dd
  elseif age == buckets then
    successes = successes + intDiv(s * overlap, bucketMs)
    spent = spent + intDiv(g * overlap + bucketMs - 1, bucketMs)
    denied = denied + intDiv(dd * overlap, bucketMs)
  end
end
local allowance = budgetAllowance(successes, ratioPpm, minAllowance)
return { 1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance }
