--[[
  Writes a job's attempt state for a time to live.

  KEYS[1]  T:att:<job id>:<createdAt>
  ARGV[1]  the attempt state's JSON
  ARGV[2]  time to live, ms (> 0)
  ARGV[3]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  1
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

dlWriteAttempts(KEYS[1], ARGV[1], serverNowMs(ARGV[3]), tonumber(ARGV[2]))
return 1
