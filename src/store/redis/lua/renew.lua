-- ARGV: debounceKey, sessionKey, fence, now, leaseMs. Returns 1, or 0 for a stale fence.
-- @include prelude
-- @include lock
local dk, session, fence, now, leaseMs = ARGV[1], ARGV[2], ARGV[3], nowOf(ARGV[4]), tonumber(ARGV[5])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
local leaseUntil = now + leaseMs
redis.call('HSET', bm, 'leaseUntil', int(leaseUntil))
redis.call('ZADD', P .. 'due', leaseUntil, dk)
local lock = redis.call('GET', P .. 'lock:' .. session)
if not lock or string.match(lock, '^(%d+)') == fence then setLock(session, fence, leaseUntil, dk, lock and string.find(lock, '^%d+ %d+w') ~= nil) end
return 1
