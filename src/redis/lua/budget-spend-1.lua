--[[
  Applies a worker's settings to a dependency's budget, adds its batched successes (each group with its
  age), and decides `count` retries (0 for a success batch alone), atomically, in one round trip. The
  rules and arithmetic are those of src/budget/window.ts (see includes/budget-window.lua).

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  bucketMs       the caller's settings: sub-bucket length in ms (windowMs / buckets)
  ARGV[2]  buckets        sub-buckets per window
  ARGV[3]  ratioPpm       the ratio in parts per million (0.2 -> 200000)
  ARGV[4]  minAllowance   retries always allowed per window
  ARGV[5]  version        the settings' version (a higher one takes over, see window.ts)
  ARGV[6]  count          retries asked for at once (>= 0); they are decided one after another
  ARGV[7]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)
  ARGV[8], ARGV[9], ...   successes as pairs: ageMs (how long before this call they happened), count

  Returns {granted, allowance, spent, denied, successes,
           bucketMs, buckets, ratioPpm, minAllowance, version,      the governing settings applied
           pending (0 | 1), bucketMs, buckets, ratioPpm, minAllowance, version,   a pending change (or 0s)
           reset}
    granted    how many of the `count` retries fit (spent < allowance before each, in every ring);
               counted as spent. The other count - granted are counted as denied, never as spent.
    allowance  max(minAllowance, floor(ratioPpm * successes / 1e6)) of the governing settings, lowered to
               what a pending change leaves room for
    spent, denied, successes   the governing window's counts after this call
    (the first five as integers below 2^51, else as decimal strings: Redis turns Lua numbers into
    integer replies exactly only below 2^51, and counts reach 2^53 - 1)
    reset      "" or, when the stored state could not be read and was replaced, what was wrong with it
  or, when the caller's settings govern, no change is pending and nothing was reset, the first five alone:
           {granted, allowance, spent, denied, successes}
]]
--#include "includes/server-time.lua"
--#include "includes/budget-window.lua"

local caller = {}
for i = 1, 5 do
  caller[i] = tonumber(ARGV[i])
end
local aged = {}
for i = 8, #ARGV do
  aged[i - 7] = tonumber(ARGV[i])
end
return budgetWrite(KEYS[1], caller, aged, tonumber(ARGV[6]), serverNowMs(ARGV[7]))
