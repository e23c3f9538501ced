--[[
  Claims an idempotency key for one caller, or reports what holds it.

  KEYS[1]  the key's hash: state ('running' | 'done'), token (the caller that holds or finished it),
           value (JSON outcome)
  ARGV[1]  the caller's token (unique per call)
  ARGV[2]  in-flight time to live, ms: how long a claim survives a caller that crashed

  Returns
    {'run'}               the key was free: the caller holds it now and must finish or release it
    {'done', value}       the work finished before: value is the stored outcome (JSON)
    {'wait', pttl}        another caller is running it; its claim expires in pttl ms unless renewed
]]
local state = redis.call('HMGET', KEYS[1], 'state', 'value')
if state[1] == 'done' then
  return { 'done', state[2] }
end
if state[1] == 'running' then
  return { 'wait', redis.call('PTTL', KEYS[1]) }
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'running', 'token', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return { 'run' }
