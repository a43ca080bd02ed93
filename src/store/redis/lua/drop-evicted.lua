-- Drop a leased buffer that has no parts left (Redis evicted its list while its meta stayed):
-- its meta, units and place in `due` go, and its session is released for the next buffers.
-- ARGV: debounceKey, sessionKey, fence. Returns 1, or 0 when the fence is stale or parts exist.
-- @include prelude
-- @include release-session
local dk, session, fence = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return 0 end
if redis.call('LLEN', P .. 'buf:' .. dk) > 0 then return 0 end
redis.call('DEL', P .. 'bm:' .. dk, P .. 'bu:' .. dk)
redis.call('ZREM', P .. 'due', dk)
releaseSession(session, fence)
return 1
