--[[
  replay-run-prune-3.lua: removes one replay run beyond the store's retention, with its snapshot, unless
  it was started and is neither done nor cancelled (a runner may still go on with it).

  KEYS[1]  the run, "{<prefix>:g}:replay-run:<id>" (a string of JSON)
  KEYS[2]  its snapshot of record ids, "{<prefix>:g}:replay-run:<id>:ids" (a list)
  KEYS[3]  the runs' index, "{<prefix>:g}:replay-runs" (a sorted set of ids)

  ARGV[1]  the run's id

  Returns  1 when removed, 0 when kept (started and open)
]]
local current = redis.call('GET', KEYS[1])
if current then
  local run = cjson.decode(current)
  if run.startedAtMs ~= nil and (run.status == 'pending' or run.status == 'running') then
    return 0
  end
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
