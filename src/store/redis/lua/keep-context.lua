-- Close a leased batch as context: its parts leave the buffer as commit.lua takes them (the
-- fence checked, the session released, the buffer re-armed from later parts), and its messages
-- join the session's context (include/context.lua). ARGV: debounceKey, sessionKey, fence, part
-- count, now, maxMessages, ttlMs, then one message JSON each.
-- Returns 1, or false for a stale fence (nothing changes).
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
-- @include context
local dk, session, fence, k, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
releaseSession(session, fence)
rearm(dk, k)
appendContext(session, now, tonumber(ARGV[6]), tonumber(ARGV[7]), 8)
return 1
