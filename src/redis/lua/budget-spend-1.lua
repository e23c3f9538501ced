--[[
  Decides one retry against a dependency's budget, atomically, in one round trip.

  KEYS[1]  "{<prefix>:<dependency>}:budget"  the dependency's hash (see includes/budget-window.lua)

  ARGV[1]  bucketMs       sub-bucket length in ms (windowMs / buckets)
  ARGV[2]  buckets        sub-buckets per window
  ARGV[3]  ratioPpm       the ratio in parts per million (0.2 -> 200000)
  ARGV[4]  minAllowance   retries always allowed per window
  ARGV[5]  mode           "0" enforce, "1" shadow
  ARGV[6]  successes      batched successes to add to the current bucket first (0 for none)
  ARGV[7]  ttlMs          the hash's time to live after this write (2 windows)
  ARGV[8]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)

  Returns {status, allowance, spent, denied, successes}, the counts after this decision:
    status 1  granted: spent < allowance; counted as spent
    status 0  denied (enforce): counted as denied, never as spent
    status 2  would have been denied (shadow): counted as denied, not as spent, and let through
]]
--@include budget-window

local key = KEYS[1]
local bucketMs = tonumber(ARGV[1])
local buckets = tonumber(ARGV[2])
local ratioPpm = tonumber(ARGV[3])
local minAllowance = tonumber(ARGV[4])
local shadow = ARGV[5] == '1'
local add = tonumber(ARGV[6])
local ttlMs = tonumber(ARGV[7])
local now = budgetNow(ARGV[8])

local w = budgetRead(key, now, bucketMs, buckets)
w.s = w.s + add
w.successes = w.successes + add
local allowance = budgetAllowance(w.successes, ratioPpm, minAllowance)
local status
if w.spent < allowance then
  status = 1
  w.g = w.g + 1
  w.spent = w.spent + 1
else
  if shadow then
    status = 2
  else
    status = 0
  end
  w.d = w.d + 1
  w.denied = w.denied + 1
end
budgetWrite(key, w, bucketMs, buckets, ratioPpm, minAllowance, ttlMs)
return { status, allowance, w.spent, w.denied, w.successes }
