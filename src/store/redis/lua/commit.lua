-- Move a leased batch to the outbox. ARGV: debounceKey, sessionKey, fence, part count, now,
-- record id, record sessionKey, createdAt, state, draft JSON.
-- Returns {seq, now}, or false for a stale fence.
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
-- @include commit-one
return commitOne(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
