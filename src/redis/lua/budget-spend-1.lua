--[[
  Decides `count` retries (usually 1) against a dependency's budget, atomically, in one round trip.

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  bucketMs       sub-bucket length in ms (windowMs / buckets)
  ARGV[2]  buckets        sub-buckets per window
  ARGV[3]  ratioPpm       the ratio in parts per million (0.2 -> 200000)
  ARGV[4]  minAllowance   retries always allowed per window
  ARGV[5]  successes      batched successes to add to the current bucket first (0 for none)
  ARGV[6]  count          retries asked for at once (>= 1); they are decided one after another
  ARGV[7]  ttlMs          the key's time to live after this write (2 windows)
  ARGV[8]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)

  Returns {granted, allowance, spent, denied, successes}:
    granted    how many of the `count` retries fit (spent < allowance before each); counted as spent.
               The other count - granted are counted as denied, never as spent (in shadow mode the caller
               lets them through anyway; the counts are the same).
    allowance  max(minAllowance, floor(ratioPpm * successes / 1e6))
    spent, denied, successes   the window's counts after this call
]]
--@include budget-window

local key = KEYS[1]
local bucketMs = tonumber(ARGV[1])
local buckets = tonumber(ARGV[2])
local ratioPpm = tonumber(ARGV[3])
local minAllowance = tonumber(ARGV[4])
local add = tonumber(ARGV[5])
local count = tonumber(ARGV[6])
local ttlMs = tonumber(ARGV[7])
local now = budgetNow(ARGV[8])

local w = budgetAdvance(budgetDecode(key), now, bucketMs, buckets)
local r, cur = w.r, w.cur
r[cur], r[7], w.successes = r[cur] + add, r[7] + add, w.successes + add
local allowance = budgetAllowance(w.successes, ratioPpm, minAllowance)
local granted = allowance - w.spent
if granted < 0 then
  granted = 0
elseif granted > count then
  granted = count
end
local denied = count - granted
r[cur + 1], r[8] = r[cur + 1] + granted, r[8] + granted
r[cur + 2], r[9] = r[cur + 2] + denied, r[9] + denied
budgetSave(key, r, ratioPpm, minAllowance, ttlMs)
return { granted, allowance, w.spent + granted, w.denied + denied, w.successes }
