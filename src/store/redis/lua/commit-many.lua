-- Several commits in one call (the batches one claim took usually finish together): each as
-- commit.lua, in order, each under its own fence. ARGV: count, then commit.lua's arguments for
-- each (fourteen, and two per shared value). Returns one answer per batch: {seq, now}, false for
-- a stale fence, or 'held'.
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
-- @include commit-one
local out = {}
local a = 1
for n = 1, tonumber(ARGV[1]) do
  local values = { ttlMs = tonumber(ARGV[a + 13]), count = tonumber(ARGV[a + 14]), from = a + 15 }
  out[n] = commitOne(ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], tonumber(ARGV[a + 4]), nowOf(ARGV[a + 5]), ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9], ARGV[a + 10], ARGV[a + 11], ARGV[a + 12], values)
  a = a + 14 + 2 * values.count
end
return out
