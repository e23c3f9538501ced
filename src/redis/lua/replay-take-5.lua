--[[
  Removes a dead-letter record, but only once its replay job is on the source queue. Runs inside the same
  MULTI as the BullMQ add of the replay job, after it: when that add failed, the record stays, so a replay
  never loses a job; when it succeeded, both happen or neither does, so a replay never duplicates one.

  KEYS[1]  the dead-letter job's hash            <prefix>:<dlq>:<dl-id>
  KEYS[2]  the dead-letter queue's wait list     <prefix>:<dlq>:wait
  KEYS[3]  the dead-letter queue's paused list   <prefix>:<dlq>:paused
  KEYS[4]  the dead-letter job's logs            <prefix>:<dlq>:<dl-id>:logs
  KEYS[5]  the replay job's hash                 <prefix>:<queue>:<replay-id>
  ARGV[1]  the dead-letter job id

  Returns
    1    the record was removed
    0    there was no record (already replayed or purged)
    -1   the replay job is not on the source queue: nothing was removed
]]
if redis.call('EXISTS', KEYS[5]) == 0 then
  return -1
end
-- From the tail, stopping at the first match: the list holds each id once, and a replay takes the oldest
-- records (at the tail) first, so this is O(1) where a full scan would make a replay quadratic.
redis.call('LREM', KEYS[3], -1, ARGV[1])
redis.call('LREM', KEYS[2], -1, ARGV[1])
redis.call('DEL', KEYS[4])
return redis.call('DEL', KEYS[1])
