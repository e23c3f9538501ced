--[[
  One page of a queue's dead-letter records matching a filter, in (deadLetteredAt, id) order. Read only.
  It walks the smallest of the filter's indexes from the cursor, inside the time range, and checks the
  other filter fields by the record's membership in their indexes (a ZSCORE each): the work is the page
  plus the entries of that index that fail the other fields, at most ARGV[6] of them; never the whole
  queue.

  KEYS[1]  T:dl:all     KEYS[2]  T:dl:r:<reason> or T:dl:all     KEYS[3]  T:dl:d:<dependency> or T:dl:all
  KEYS[4]  T:dl:n:<name> or T:dl:all       KEYS[5]  T:dl:rec     KEYS[7]  T:dl:claim
  KEYS[6]  T:dl:ix (not read since the walk checks the indexes)

  ARGV[1]  "asc" | "desc"
  ARGV[2]  cursor: deadLetteredAt of the last entry returned before, or "" to start at the beginning
  ARGV[3]  cursor: that entry's id ("" with no cursor)
  ARGV[4]  since: deadLetteredAt >= this ("-inf" for no bound)
  ARGV[5]  before: deadLetteredAt < this ("+inf" for no bound)
  ARGV[6]  at most this many index entries looked at (the page limit included)
  ARGV[7]  page limit (>= 0)
  ARGV[8]  "1" when KEYS[2], KEYS[3], KEYS[4] are filters ("rdn" flags: e.g. "101" = reason and name)

  Returns  {next, id1, at1, record1, claim1, id2, ...}: next is the cursor "<at>_<id>" of the last entry
           looked at when the page stopped early (limit or look-up bound reached, more may follow), or ""
           at the end. record/claim are false when missing.
]]
--#include "includes/server-time.lua"
--#include "includes/dead-letters.lua"
--#include "includes/index-walk.lua"

local asc = ARGV[1] == 'asc'
local limit = tonumber(ARGV[7])
local budget = tonumber(ARGV[6])

local walk, others = dlWalkPlan(KEYS[1], { KEYS[2], KEYS[3], KEYS[4] }, ARGV[8])
local rank
if asc then
  rank = dlFirstRank(walk, ARGV[4], ARGV[2], ARGV[3])
else
  rank = dlLastRank(walk, ARGV[5], ARGV[2], ARGV[3])
end

local since = tonumber(ARGV[4])
local before = tonumber(ARGV[5])
local out = { '' }
local taken, looked = 0, 0
local lastAt, lastMember = nil, nil
local BATCH = 100

-- Looks at one index entry; false once the page is complete.
local function visit(member, at)
  local score = tonumber(at)
  if (asc and score >= before) or ((not asc) and score < since) then
    return false
  end
  if taken == limit or looked == budget then
    if lastAt ~= nil then
      out[1] = lastAt .. '_' .. dlId(lastMember)
    end
    return false
  end
  looked = looked + 1
  local id = dlId(member)
  if dlInOthers(member, others) then
    taken = taken + 1
    table.insert(out, id)
    table.insert(out, at)
    table.insert(out, redis.call('HGET', KEYS[5], id) or false)
    table.insert(out, redis.call('HGET', KEYS[7], id) or false)
  end
  lastAt, lastMember = at, member
  return true
end

local going = true
while going do
  local batch
  if asc then
    batch = redis.call('ZRANGE', walk, rank, rank + BATCH - 1, 'WITHSCORES')
    rank = rank + BATCH
  else
    if rank < 0 then break end
    local from = math.max(0, rank - BATCH + 1)
    batch = redis.call('ZRANGE', walk, from, rank, 'WITHSCORES')
    rank = from - 1
  end
  if #batch == 0 then break end
  local n = #batch / 2
  for k = 1, n do
    local j = asc and (2 * k - 1) or (2 * (n - k) + 1)
    if not visit(batch[j], batch[j + 1]) then
      going = false
      break
    end
  end
end
return out
