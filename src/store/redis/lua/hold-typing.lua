-- Hold an open buffer for its typing sender (contract §13). ARGV: debounceKey, holdMs, now
-- ('' = server time): untilAt is now + holdMs on the clock admit.lua arms deadlines by.
-- A buffer not leased, not retrying, not deferred and closing by its window is due at
-- min(untilAt, firstAt + maxWait) when that is later than its deadline now; a later part
-- re-arms it from its parts as admit.lua always does.
-- Returns the new deadline, or false when nothing moved.
-- @include prelude
local dk = ARGV[1]
local untilAt = nowOf(ARGV[3]) + tonumber(ARGV[2])
local bm = P .. 'bm:' .. dk
local m = redis.call('HMGET', bm, 'deadline', 'reason', 'firstAt', 'maxWait', 'fence', 'retrying', 'deferred')
if not m[1] or m[5] or m[6] or m[7] or m[2] ~= 'window' then return false end
local hardAt = tonumber(m[3]) + tonumber(m[4])
local deadline, reason = untilAt, 'window'
if hardAt < untilAt then deadline, reason = hardAt, 'max_wait' end
if deadline <= tonumber(m[1]) then return false end
redis.call('HSET', bm, 'deadline', int(deadline), 'reason', reason)
redis.call('ZADD', P .. 'due', deadline, dk)
return deadline
