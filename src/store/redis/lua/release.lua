-- Give a lease back after a failed flush. ARGV: debounceKey, sessionKey, fence, retryAt, leaseMs.
-- The session stays held by this buffer until it commits (any instance retries it from
-- `retryAt`), so no later batch of the session overtakes it.
-- Returns 1, or 0 for a stale fence.
-- @include prelude
-- @include lock
local dk, session, fence, retryAt, leaseMs = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
redis.call('HSET', bm, 'deadline', int(retryAt), 'retrying', fence)
local lock = redis.call('GET', P .. 'lock:' .. session)
setLock(session, fence, retryAt + leaseMs, dk, lock ~= false and string.find(lock, '^%d+ %d+w') ~= nil)
redis.call('ZADD', P .. 'due', retryAt, dk)
return 1
