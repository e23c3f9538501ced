--[[
  Marks a dependency down or up (see includes/flow.lua). Up starts the slow-start ramp only when it was
  down: the recovery time becomes now and the pacer starts afresh.

  KEYS[1]  D:flow
  ARGV[1]  "down" | "up" | "read" (read writes nothing)
  ARGV[2]  time to live of the state, ms (> 0)
  ARGV[3]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  { down (0 | 1), recovered at ms ("" when never), now ms }
]]
--#include "includes/server-time.lua"
--#include "includes/flow.lua"

local now = serverNowMs(ARGV[3])
local key = KEYS[1]
local op = ARGV[1]
if op == 'down' then
  redis.call('HSET', key, 'down', '1')
  redis.call('PEXPIRE', key, tonumber(ARGV[2]))
elseif op == 'up' and redis.call('HGET', key, 'down') then
  redis.call('HDEL', key, 'down')
  redis.call('HSET', key, 'rec', string.format('%d', now), 'tat', string.format('%d', now))
  redis.call('PEXPIRE', key, tonumber(ARGV[2]))
end
local down = 0
if redis.call('HGET', key, 'down') then down = 1 end
return { down, redis.call('HGET', key, 'rec') or '', now }
