--[[
  Stores the outcome of finished work, once; the holder may repeat it (a retry after a lost reply).

  KEYS[1]  the key's hash (see idempotency-begin-1.lua); once done it keeps the token that stored it
  ARGV[1]  the caller's token
  ARGV[2]  the outcome, JSON
  ARGV[3]  outcome time to live, ms (at least the policy's maxAge, so a late retry still finds it)

  Returns
    1   stored: the caller held the claim, or its claim had expired and nobody took the key since, or the
        key is done already with this token and this outcome (this caller's earlier finish landed)
    0   not stored: the key is done with another token or outcome, or another caller claimed it after this
        caller's claim expired

  A repeat writes the hash again (same fields, time to live from now) rather than returning early: a
  durable finish follows the script with WAIT, which then covers this master's copy of the outcome.
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'token', 'value')
if state[1] == 'done' and (state[2] ~= ARGV[1] or state[3] ~= ARGV[2]) then
  return 0
end
if state[1] == 'running' and state[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'done', 'token', ARGV[1], 'value', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
