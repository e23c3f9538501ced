-- The walk shared by a dead-letter listing and count over a filter (src/redis/dead-letter-store.ts): of
-- the filter's indexes T:dl:r:<reason>, T:dl:d:<dependency>, T:dl:n:<name>, walk the smallest (one ZCARD
-- each to find it) and check each entry it yields against the others, one ZSCORE in each. So the work is
-- what the smallest index holds in the time range, never the whole queue.
--#include "includes/dead-letters.lua"

-- The index to walk, and the other indexes a record must be in too. `all` is T:dl:all (walked when no
-- field is filtered); `indexes` the reason, dependency and name index keys; `flags` the "rdn" flags, "1"
-- where that index is a filter (e.g. "101" = reason and name).
local function dlWalkPlan(all, indexes, flags)
  local walk, smallest = all, nil
  local others = {}
  for i = 1, 3 do
    if string.sub(flags, i, i) == '1' then
      local size = redis.call('ZCARD', indexes[i])
      if smallest == nil or size < smallest then
        if smallest ~= nil then table.insert(others, walk) end
        walk, smallest = indexes[i], size
      else
        table.insert(others, indexes[i])
      end
    end
  end
  return walk, others
end

-- Whether the record of index member `member` is in each index of `others` too: one ZSCORE each (a hash
-- lookup, about five times cheaper than reading and decoding the record's T:dl:ix entry, which filing
-- and removal keep in step with the indexes). With `others` empty every record matches.
local function dlInOthers(member, others)
  for _, key in ipairs(others) do
    if not redis.call('ZSCORE', key, member) then return false end
  end
  return true
end

-- The rank in `walk` of the first entry to look at in ascending order: past the cursor (`cursorAt`,
-- `cursorId`; cursorAt "" for none), never before the time range (deadLetteredAt >= `since`, "-inf" for
-- no bound).
local function dlFirstRank(walk, since, cursorAt, cursorId)
  local rank = since == '-inf' and 0 or redis.call('ZCOUNT', walk, '-inf', '(' .. since)
  if cursorAt ~= '' then
    local past = dlCountBefore(walk, cursorAt, dlMember(cursorId), true)
    if past > rank then rank = past end
  end
  return rank
end

-- The rank in `walk` of the first entry to look at in descending order: before the cursor, never past
-- the time range (deadLetteredAt < `before`, "+inf" for no bound); -1 when there is none.
local function dlLastRank(walk, before, cursorAt, cursorId)
  local rank = redis.call('ZCOUNT', walk, '-inf', '(' .. before) - 1
  if cursorAt ~= '' then
    local past = dlCountBefore(walk, cursorAt, dlMember(cursorId), false) - 1
    if past < rank then rank = past end
  end
  return rank
end
