--[[
  Reads a dependency's budget without changing it (no write, no expiry extended), with the governing
  settings stored with it (a pending change that is due is applied in the view only).

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)

  Returns {0} when the key does not exist; {-1, problem} when it cannot be read; else
  {1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance, version,
   pending (0 | 1), bucketMs, buckets, ratioPpm, minAllowance, version}, the four counts as integers
  below 2^51, else as decimal strings (Redis turns Lua numbers into integer replies exactly only below
  2^51; counts reach 2^53 - 1).
]]
--#include "includes/server-time.lua"
--#include "includes/budget-window.lua"

local now = serverNowMs(ARGV[1])
local st, problem = budgetDecode(KEYS[1])
if problem then
  return { -1, problem }
end
if not st then
  return { 0 }
end
-- The view, under pcall: counts are checked as they are summed.
local function view()
  local rings, settings = budgetRings(st, now, true)
  local currents = {}
  for n = 1, #rings do
    currents[n] = currentAt(rings[n], settings[n], now)
  end
  local gs, gg, gd, ga, room = budgetView(rings, settings, now, currents)
  if gg + room < ga then
    ga = gg + room
  end
  return budgetReply(1, ga, gg, gd, gs, settings)
end

local ok, reply = pcall(view)
if not ok then
  return { -1, 'malformed counts' }
end
return reply
