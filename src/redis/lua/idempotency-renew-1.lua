--[[
  Extends a running claim while the work is still going, so long work is not run twice.

  KEYS[1]  the key's hash (see idempotency-begin-1.lua)
  ARGV[1]  the caller's token
  ARGV[2]  in-flight time to live, ms

  Returns
    1   renewed
    0   lost: the claim expired (and may belong to another caller now)
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'token')
if state[1] == 'running' and state[2] == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
