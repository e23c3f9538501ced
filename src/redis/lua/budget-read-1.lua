--[[
  Reads a dependency's budget without changing it (no write, no expiry extended).

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)
  ARGV[2]  bucketMs       optional: the reader's settings (ARGV[2..5], all or none); without them the
  ARGV[3]  buckets          settings stored by the last writer are used
  ARGV[4]  ratioPpm
  ARGV[5]  minAllowance

  Returns {0} when the key does not exist (or holds another bucket geometry than the one given), else
  {1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance}.
]]
--@include budget-window

local key = KEYS[1]
local now = budgetNow(ARGV[1])
local r = budgetDecode(key)
if not r then
  return { 0 }
end
local bucketMs, buckets, ratioPpm, minAllowance = r[2], r[3], r[4], r[5]
if ARGV[2] ~= nil and ARGV[2] ~= '' then
  if tonumber(ARGV[2]) ~= bucketMs or tonumber(ARGV[3]) ~= buckets then
    return { 0 }
  end
  ratioPpm, minAllowance = tonumber(ARGV[4]), tonumber(ARGV[5])
end
-- Advance a copy in memory only: reading never writes.
local w = budgetAdvance(r, now, bucketMs, buckets)
local allowance = budgetAllowance(w.successes, ratioPpm, minAllowance)
return { 1, allowance, w.spent, w.denied, w.successes, bucketMs, buckets, ratioPpm, minAllowance }
