--[[
  How many of a queue's dead-letter records match a filter, one chunk at a time. Read only. With at most
  one of reason, dependency and name it is one ZCOUNT on that index (O(log n)), in one call. With several
  it walks the smallest of their indexes inside the time range, from the cursor, and checks the others
  (a ZSCORE in each), looking at no more than ARGV[6] entries per call, so no call holds Redis for long
  on a large queue; the caller adds the chunks up and calls again with the cursor returned. Without a
  time range, an index of at most 10 × ARGV[6] entries is counted in one ZINTERCARD where the server has
  it (Redis 7), which costs about one chunk's walk.

  KEYS[1]  T:dl:all     KEYS[2]  T:dl:r:<reason> or T:dl:all     KEYS[3]  T:dl:d:<dependency> or T:dl:all
  KEYS[4]  T:dl:n:<name> or T:dl:all       KEYS[5]  T:dl:ix (not read since the walk checks the indexes)

  ARGV[1]  since: deadLetteredAt >= this ("-inf" for no bound)
  ARGV[2]  before: deadLetteredAt < this ("+inf" for no bound)
  ARGV[3]  "rdn" flags: "1" where KEYS[2..4] is a filter
  ARGV[4]  cursor: deadLetteredAt of the last entry looked at before, or "" to start at the beginning
  ARGV[5]  cursor: that entry's id ("" with no cursor)
  ARGV[6]  at most this many index entries looked at in this call (>= 1)

  Returns  {count, next}: the matches in this chunk, and the cursor "<at>_<id>" of the last entry looked
           at when more may follow, or "" when the count is complete
]]
--#include "includes/index-walk.lua"

local walk, others = dlWalkPlan(KEYS[1], { KEYS[2], KEYS[3], KEYS[4] }, ARGV[3])
local before = ARGV[2] == '+inf' and '+inf' or '(' .. ARGV[2]
if #others == 0 then
  return { redis.call('ZCOUNT', walk, ARGV[1], before), '' }
end

-- The whole count in one ZINTERCARD (Redis 7 and later), in C: with no time range and no cursor, when the
-- smallest index holds at most ten chunks, which costs Redis about what one chunk's walk in Lua does. An
-- older server refuses the command, and the walk below counts instead.
if ARGV[1] == '-inf' and ARGV[2] == '+inf' and ARGV[4] == ''
  and redis.call('ZCARD', walk) <= 10 * tonumber(ARGV[6]) then
  local n = redis.pcall('ZINTERCARD', 1 + #others, walk, unpack(others))
  if type(n) == 'number' then return { n, '' } end
end

local rank = dlFirstRank(walk, ARGV[1], ARGV[4], ARGV[5])
local last = redis.call('ZCOUNT', walk, '-inf', before) - 1
local stop = math.min(last, rank + tonumber(ARGV[6]) - 1)
if stop < rank then return { 0, '' } end

local n = 0
local entries = redis.call('ZRANGE', walk, rank, stop, 'WITHSCORES')
for k = 1, #entries, 2 do
  if dlInOthers(entries[k], others) then n = n + 1 end
end
if stop == last then return { n, '' } end
return { n, entries[#entries] .. '_' .. dlId(entries[#entries - 1]) }
