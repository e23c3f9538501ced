-- Shared by the dead-letter scripts (src/redis/dead-letter-store.ts). All of a queue's keys start with its
-- hash tag "{<prefix>:q:<queue>}" (one Redis Cluster slot):
--   T:dl:seq      the last record id given out (INCR; never reset, so an id is never reused)
--   T:dl:rec      hash  id -> the record's JSON, as filed
--   T:dl:ix       hash  id -> JSON [at, reasonIndexKey, dependencyIndexKey, nameIndexKey]: what to remove
--                 from where, readable even when the record is not
--   T:dl:claim    hash  id -> JSON {jobId, claimedAt}: a replay has taken the record
--   T:dl:all      zset  every record; T:dl:r:<reason>, T:dl:d:<dependency>, T:dl:n:<name> one per value.
--                 Score: deadLetteredAt (ms). Member: the id zero-padded to 16 digits, so ties order by id.
--   T:dl:meta     hash  registeredAt, maxAgeMs, maxCount, evicted
--   T:att:<job id>:<createdAt>   "<expiresAtMs>|<attempt state JSON>", PX ttl. The key's PX is the
--                 state's expiry: a store on the server's time reads and writes it with a plain GET and SET
--                 and keeps 9007199254740991 (never) as expiresAtMs; only a store on the test-only clock
--                 compares expiresAtMs, which these scripts write from that clock
-- Index keys of other records (read from T:dl:ix) are not declared in KEYS; they share the tag's slot.

local function dlMember(id)
  return string.format('%016d', tonumber(id))
end

local function dlId(member)
  return string.format('%d', tonumber(member))
end

-- The rank in `key` of the first entry past (`at`, `member`): the entries scored below `at`, plus those
-- scored `at` whose member is below `member` (or at most `member` when inclusive). A binary search among
-- the entries of one time, so a cursor resumes in O(log n) whatever the queue's size.
local function dlCountBefore(key, at, member, inclusive)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. at)
  local hi = redis.call('ZCOUNT', key, '-inf', at)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', key, mid, mid)[1]
    if m < member or (inclusive and m == member) then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo
end

-- Removes one record and its index entries; 1 when it was there, 0 when not.
local function dlRemove(recKey, ixKey, claimKey, allKey, id)
  local member = dlMember(id)
  local ix = redis.call('HGET', ixKey, id)
  if ix then
    local ok, fields = pcall(cjson.decode, ix)
    if ok and type(fields) == 'table' then
      for i = 2, 4 do
        if type(fields[i]) == 'string' and fields[i] ~= '' then
          redis.call('ZREM', fields[i], member)
        end
      end
    end
  end
  local removed = redis.call('ZREM', allKey, member)
  redis.call('HDEL', recKey, id)
  redis.call('HDEL', ixKey, id)
  redis.call('HDEL', claimKey, id)
  if removed == 1 or ix then
    return 1
  end
  return 0
end

-- The attempt state text stored at `key`, or nil when there is none or it expired at `now`.
local function dlReadAttempts(key, now)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  local bar = string.find(value, '|', 1, true)
  if not bar then
    return nil
  end
  local expiresAt = tonumber(string.sub(value, 1, bar - 1))
  if not expiresAt or expiresAt <= now then
    return nil
  end
  return string.sub(value, bar + 1)
end

local function dlWriteAttempts(key, state, now, ttlMs)
  redis.call('SET', key, string.format('%d', now + ttlMs) .. '|' .. state, 'PX', ttlMs)
end
