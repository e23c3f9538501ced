--[[
  Reads a dependency's budget without changing it (no write, no expiry extended), with the governing
  settings stored with it (a pending change that is due is applied in the view only).

  KEYS[1]  "{<prefix>:d:<dependency>}:budget"  the dependency's key (see includes/budget-window.lua)

  ARGV[1]  nowMs          optional, TEST ONLY: use this time instead of the server's TIME ("" = TIME)

  Returns {0} when the key does not exist; {-1, problem} when it cannot be read; else
  {1, allowance, spent, denied, successes, bucketMs, buckets, ratioPpm, minAllowance, version,
   pending (0 | 1), bucketMs, buckets, ratioPpm, minAllowance, version}, the four counts as decimal
  strings (Redis turns Lua numbers into integer replies exactly only below 2^51; counts reach 2^53 - 1).
]]
--@include budget-window

local now = budgetNow(ARGV[1])
local st, problem = budgetDecode(KEYS[1])
if problem then
  return { -1, problem }
end
if not st then
  return { 0 }
end
-- The view, under pcall: counts are checked as they are summed.
local function view()
  local rings, settings = { st.r }, { st.g }
  if pendingDue(st, now) then
    rings[1], settings[1] = st.pr, st.p
  elseif st.p ~= nil then
    rings[2], settings[2] = st.pr, st.p
  end
  local room, gs, gg, gd, ga = nil, 0, 0, 0, 0
  for n = 1, #rings do
    local s, g, d = ringSums(rings[n], settings[n], now, currentAt(rings[n], settings[n], now))
    local allowance = budgetAllowance(s, settings[n][3], settings[n][4])
    local left = allowance - g
    if left < 0 then
      left = 0
    end
    if room == nil or left < room then
      room = left
    end
    if n == 1 then
      gs, gg, gd, ga = s, g, d, allowance
    end
  end
  if gg + room < ga then
    ga = gg + room
  end
  local reply = { 1, countText(ga), countText(gg), countText(gd), countText(gs) }
  for i = 1, 5 do
    reply[5 + i] = settings[1][i]
  end
  reply[11] = 0
  for i = 1, 5 do
    reply[11 + i] = 0
  end
  if #rings == 2 then
    reply[11] = 1
    for i = 1, 5 do
      reply[11 + i] = settings[2][i]
    end
  end
  return reply
end

local ok, reply = pcall(view)
if not ok then
  return { -1, 'malformed counts' }
end
return reply
