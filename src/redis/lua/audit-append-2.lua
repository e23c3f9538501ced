--[[
  audit-append-2.lua: appends one entry to the audit log and trims it to its bound, atomically.

  KEYS[1]  the log, "{<prefix>:g}:audit": a list, newest entry first (LPUSH)
  KEYS[2]  its id counter, "{<prefix>:g}:audit-seq" (never reset: ids are never reused)

  ARGV[1]  TEST ONLY: the time to use, in epoch ms; "" (always, in production) uses the server's TIME
  ARGV[2]  the entry without id and time, as a JSON object: { by, action, target, reason?, detail? }
           (checked by the caller)
  ARGV[3]  the bound: the newest entries kept (a whole number >= 1)

  Returns  the stored entry as JSON: { id, atMs, by, action, target, reason?, detail? }

  Ids are contiguous: the entry with id n sits at list index (seq - n), which paging relies on.
]]

--#include "includes/server-time.lua"

local now = serverNowMs(ARGV[1])
local id = redis.call('INCR', KEYS[2])
-- Spliced rather than decoded and encoded again: the caller's JSON is kept exactly as it was sent.
local entry = string.format('{"id":"%d","atMs":%d,', id, now) .. string.sub(ARGV[2], 2)
redis.call('LPUSH', KEYS[1], entry)
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[3]) - 1)
return entry
