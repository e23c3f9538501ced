--[[
  Removes one dead-letter record and its index entries (a completed replay, a purge).

  KEYS[1]  T:dl:rec     KEYS[2]  T:dl:ix     KEYS[3]  T:dl:claim     KEYS[4]  T:dl:all
  ARGV[1]  the record id

  Returns  1 when it was there, 0 when it was gone already
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

return dlRemove(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1])
