-- Shared by the flow-control scripts (src/redis/flow-store.ts). A dependency's keys share its hash tag
-- "{<prefix>:d:<dependency>}" (one Redis Cluster slot):
--   D:flow                 hash  down ("1" while marked down), rec (recovered at, ms), tat (the pacer's
--                          theoretical arrival time, ms, fractional)
--   D:park:<queue>         list  job ids parked for the dependency, oldest first
--   D:released:<queue>     set   job ids taken from the park list whose run holds a ramp slot
--   D:paused               hash  one field per worker holding a queue paused for the dependency (the
--                          JSON array [queue, worker]), valued "<since ms> <until ms> <expires at ms>"
-- The ramp and the pacer are the pure functions of src/runtime/flow-control (slow-start.ts, pacing.ts).

-- Attempts per second admitted `elapsed` ms after recovery (elapsed nil: not recovering); -1 is unlimited.
local function flowRate(elapsed, slowStartMs, floor, maxRate)
  local rate = -1
  if elapsed ~= nil and elapsed < slowStartMs then
    if elapsed < 0 then elapsed = 0 end
    rate = floor * math.pow(2, 10 * elapsed / slowStartMs)
  end
  if maxRate ~= nil and (rate < 0 or rate > maxRate) then
    rate = maxRate
  end
  return rate
end

local function flowElapsed(flowKey, now)
  local rec = redis.call('HGET', flowKey, 'rec')
  if rec then
    return now - tonumber(rec)
  end
  return nil
end

local function flowNumber(text)
  return string.format('%.17g', text)
end
