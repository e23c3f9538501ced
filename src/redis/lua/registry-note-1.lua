--[[
  registry-note-1.lua: records that dependencies were seen, in a store's dependency registry (see
  src/redis/dependency-registry.ts). Listing reads this sorted set instead of scanning the keyspace.

  Needs Redis >= 5 (scripts replicate by effects, so reading TIME before a write is allowed).

  KEYS[1]  the registry, "{<prefix>:g}:<kind>-dependencies" (one key, the prefix's global slot)

  ARGV[1]  TEST ONLY: the time to use, in epoch ms. "" (always, in production) uses the server's TIME.
  ARGV[2…] the dependency names (at least one), raw: a sorted set's members need no encoding.

  Returns  the number of names that were not in the registry before.

  Each name's score becomes the time it was last seen (server time). The key never expires: names leave
  it through registry-forget-1.lua once their state is gone.
]]

--#include "includes/server-time.lua"

local now = serverNowMs(ARGV[1])
local added = 0
for i = 2, #ARGV do
  added = added + redis.call('ZADD', KEYS[1], now, ARGV[i])
end
return added
