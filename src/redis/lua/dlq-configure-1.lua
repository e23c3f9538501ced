--[[
  Registers a queue on its own side (its slot): the registration time, once, and its retention limits.

  KEYS[1]  T:dl:meta
  ARGV[1]  "1" to set the retention limits below, "0" to keep the current ones
  ARGV[2]  maxAgeMs ("" for none)
  ARGV[3]  maxCount ("" for none)
  ARGV[4]  TEST ONLY: the time in ms; "" uses the server's TIME

  Returns  the queue's registration time, ms
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"

redis.call('HSETNX', KEYS[1], 'registeredAt', string.format('%d', serverNowMs(ARGV[4])))
if ARGV[1] == '1' then
  for i, field in ipairs({ 'maxAgeMs', 'maxCount' }) do
    local value = ARGV[i + 1]
    if value == '' then
      redis.call('HDEL', KEYS[1], field)
    else
      redis.call('HSET', KEYS[1], field, value)
    end
  end
end
return tonumber(redis.call('HGET', KEYS[1], 'registeredAt'))
