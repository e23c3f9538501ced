--[[
  registry-forget-1.lua: removes from a dependency registry the names whose state a listing found gone,
  unless a writer saw them recently (see src/redis/dependency-registry.ts).

  Needs Redis >= 5 (scripts replicate by effects, so reading TIME before a write is allowed).

  KEYS[1]  the registry, "{<prefix>:g}:<kind>-dependencies"

  ARGV[1]  TEST ONLY: the time to use, in epoch ms. "" (always, in production) uses the server's TIME.
  ARGV[2]  the grace period in ms (> 0): a name seen at most this long ago stays, because its writer may
           not have written its state yet, and remembers (in its process) that the name is registered.
  ARGV[3…] the names to forget.

  Returns  the number of names removed.
]]

--#include "includes/server-time.lua"

local cutoff = serverNowMs(ARGV[1]) - tonumber(ARGV[2])
local removed = 0
for i = 3, #ARGV do
  local seen = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if seen and tonumber(seen) < cutoff then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
