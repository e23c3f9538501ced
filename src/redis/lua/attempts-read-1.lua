--[[
  Reads a job's attempt state (see includes/dead-letters.lua for its stored form). Read only.

  KEYS[1]  T:att:<job id>:<createdAt>
  ARGV[1]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  the attempt state's JSON, or false when there is none or it expired
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

return dlReadAttempts(KEYS[1], serverNowMs(ARGV[1])) or false
