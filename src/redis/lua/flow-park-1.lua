--[[
  Appends a job to a dependency's park list of one queue (see includes/flow.lua).

  KEYS[1]  D:park:<queue>
  ARGV[1]  the job id
  ARGV[2]  time to live of the list, ms (> 0): a parked job comes back on its own before it ends

  Returns  the list's length
]]
local length = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return length
