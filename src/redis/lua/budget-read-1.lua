--[[
  Reads a dependency's budget without changing it (no write, no expiry extended).

  KEYS[1]  "{<prefix>:<dependency>}:budget"  the dependency's hash (see includes/budget-window.lua)

  ARGV[1]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)
  ARGV[2]  bucketMs       optional: the reader's settings (ARGV[2..5], all or none); without them the
  ARGV[3]  buckets          settings stored by the last writer are used
  ARGV[4]  ratioPpm
  ARGV[5]  minAllowance

  Returns {0} when the hash does not exist (or was written with another bucket geometry than the one
  given), else {1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance}.
]]
--@include budget-window

local key = KEYS[1]
local now = budgetNow(ARGV[1])
local bucketMs, buckets, ratioPpm, minAllowance
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  bucketMs, buckets = tonumber(ARGV[2]), tonumber(ARGV[3])
  ratioPpm, minAllowance = tonumber(ARGV[4]), tonumber(ARGV[5])
else
  local cfg = redis.call('HGET', key, 'cfg')
  if not cfg then
    return { 0 }
  end
  local a, b, c, d = string.match(cfg, '^(%d+):(%d+):(%d+):(%d+)$')
  bucketMs, buckets, ratioPpm, minAllowance = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
end

local w = budgetRead(key, now, bucketMs, buckets)
if w.reset or redis.call('EXISTS', key) == 0 then
  return { 0 }
end
local allowance = budgetAllowance(w.successes, ratioPpm, minAllowance)
return { 1, allowance, w.spent, w.denied, w.successes, bucketMs, buckets, ratioPpm, minAllowance }
