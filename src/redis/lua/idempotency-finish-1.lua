--[[
  Stores the outcome of finished work, once.

  KEYS[1]  the key's hash (see idempotency-begin-1.lua)
  ARGV[1]  the caller's token
  ARGV[2]  the outcome, JSON
  ARGV[3]  outcome time to live, ms (at least the policy's maxAge, so a late retry still finds it)

  Returns
    1   stored: the caller held the claim, or its claim had expired and nobody took the key since
    0   not stored: the key is done already, or another caller claimed it after this caller's claim expired
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'token')
if state[1] == 'done' then
  return 0
end
if state[1] == 'running' and state[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'done', 'value', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
