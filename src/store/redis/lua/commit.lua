-- Move a leased batch to the outbox. ARGV: debounceKey, sessionKey, fence, part count, now,
-- record id, record sessionKey, createdAt, state, draft JSON, 'turns' (refuse when the session has held messages),
-- the last context seq the output carries ('' none), the shared values' ttlMs, their count, and
-- each one's name and value (include/commit-one.lua).
-- Returns {seq, now}, false for a stale fence, or 'held' (refused: commit-turn.lua's turn, they go first).
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
-- @include commit-one
return commitOne(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12],
  { ttlMs = tonumber(ARGV[13]), count = tonumber(ARGV[14]), from = 15 })
