--[[
  Adds a batch of successes to a dependency's current sub-bucket: one round trip per flushed batch.

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  count          successes to add (>= 1)
  ARGV[2]  bucketMs       sub-bucket length in ms
  ARGV[3]  buckets        sub-buckets per window
  ARGV[4]  ratioPpm       the ratio in parts per million (stored for readers such as the CLI)
  ARGV[5]  minAllowance   the floor (stored for readers)
  ARGV[6]  ttlMs          the key's time to live after this write (2 windows)
  ARGV[7]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)

  Returns the window's successes after the addition.
]]
--@include budget-window

local key = KEYS[1]
local count = tonumber(ARGV[1])
local bucketMs = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
local ratioPpm = tonumber(ARGV[4])
local minAllowance = tonumber(ARGV[5])
local ttlMs = tonumber(ARGV[6])
local now = budgetNow(ARGV[7])

local w = budgetAdvance(budgetDecode(key), now, bucketMs, buckets)
local r, cur = w.r, w.cur
r[cur], r[7] = r[cur] + count, r[7] + count
budgetSave(key, r, ratioPpm, minAllowance, ttlMs)
return w.successes + count
