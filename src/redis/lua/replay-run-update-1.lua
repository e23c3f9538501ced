--[[
  replay-run-update-1.lua: writes a replay run if the stored one is at the version the writer read.

  KEYS[1]  the run, "{<prefix>:g}:replay-run:<id>" (a string of JSON)

  ARGV[1]  the version the writer read
  ARGV[2]  the run to store, as JSON, already at version ARGV[1] + 1

  Returns  1 when written, 0 when the run is gone or another write came first (nothing written)
]]
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local version = string.match(current, '"version":(%d+)')
if version ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
