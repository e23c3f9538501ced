--[[
  Baseline for bench/dlq: the dead-letter count as one call (stormguard's script before it was chunked).
  How many of a queue's dead-letter records match a filter. Read only. With at most one of reason,
  dependency and name it is one ZCOUNT on that index (O(log n)); with several it walks the smallest of
  their indexes inside the time range and checks the others against T:dl:ix.

  KEYS[1]  T:dl:all     KEYS[2]  T:dl:r:<reason> or T:dl:all     KEYS[3]  T:dl:d:<dependency> or T:dl:all
  KEYS[4]  T:dl:n:<name> or T:dl:all       KEYS[5]  T:dl:ix

  ARGV[1]  since: deadLetteredAt >= this ("-inf" for no bound)
  ARGV[2]  before: deadLetteredAt < this ("+inf" for no bound)
  ARGV[3]  "rdn" flags: "1" where KEYS[2..4] is a filter

  Returns  the count
]]
local walk, smallest = KEYS[1], nil
local others = {}
for i = 2, 4 do
  if string.sub(ARGV[3], i - 1, i - 1) == '1' then
    local size = redis.call('ZCARD', KEYS[i])
    if smallest == nil or size < smallest then
      if smallest ~= nil then table.insert(others, walk) end
      walk, smallest = KEYS[i], size
    else
      table.insert(others, KEYS[i])
    end
  end
end
local before = ARGV[2] == '+inf' and '+inf' or '(' .. ARGV[2]
if #others == 0 then
  return redis.call('ZCOUNT', walk, ARGV[1], before)
end
local n = 0
local ids = redis.call('ZRANGEBYSCORE', walk, ARGV[1], before)
for _, member in ipairs(ids) do
  local ok, fields = pcall(cjson.decode, redis.call('HGET', KEYS[5], string.format('%d', tonumber(member))) or '')
  if ok and type(fields) == 'table' then
    local match = true
    for _, key in ipairs(others) do
      if fields[2] ~= key and fields[3] ~= key and fields[4] ~= key then match = false end
    end
    if match then n = n + 1 end
  end
end
return n
