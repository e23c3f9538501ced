--[[
  Gives up a claim after the work failed, so a retry may run it. A failure is never stored.

  KEYS[1]  the key's hash (see idempotency-begin-1.lua)
  ARGV[1]  the caller's token

  Returns
    1   released
    0   nothing to release: the claim expired or belongs to another caller
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'token')
if state[1] == 'running' and state[2] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
