--[[
  audit-list-2.lua: one page of the audit log, newest first. Read only.

  KEYS[1]  the log, "{<prefix>:g}:audit" (newest first)
  KEYS[2]  its id counter, "{<prefix>:g}:audit-seq"

  ARGV[1]  the page size (a whole number >= 1)
  ARGV[2]  "" for the newest page, or the id the page starts below (the previous page's last id)

  Returns  { entries as JSON strings..., more } where `more` is "1" when older entries remain, else "0"
]]

local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[1])
local start = 0
if ARGV[2] ~= '' then start = seq - tonumber(ARGV[2]) + 1 end
local length = redis.call('LLEN', KEYS[1])
if start < 0 then start = 0 end
local page = {}
if start < length then page = redis.call('LRANGE', KEYS[1], start, start + limit - 1) end
page[#page + 1] = (start + limit < length) and '1' or '0'
return page
