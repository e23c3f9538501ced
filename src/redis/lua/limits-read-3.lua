--[[
  A dependency's limits state (LimitState of src/runtime/limits/store.ts). Writes nothing: what has
  expired reads as absent and stays until a write drops it. Keys: see includes/limits.lua.

  KEYS[1]  D:limits
  KEYS[2]  D:limit-leases
  KEYS[3]  D:limit-costs
  ARGV[1]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  the state: see limitsReply in includes/limits.lua
]]
--#include "includes/server-time.lua"
--#include "includes/limits.lua"

local now = serverNowMs(ARGV[1])
local s = limitsLoad(KEYS[1], now)
return limitsReply(s, now, limitsInFlight(KEYS[2], KEYS[3], now))
