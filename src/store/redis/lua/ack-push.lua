-- ARGV: session, seq, token, state (delivered|retry|dead), attempts, at, lastError, now.
-- Returns 1, or 0 when the token is stale.
-- @include prelude
-- @include entry
local session, seq, token, state, attempts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local at, lastError, now = ARGV[6], ARGV[7], nowOf(ARGV[8])
local leaseKey, queue = P .. 'pl:' .. session, P .. 'q:' .. session
local lease = redis.call('GET', leaseKey)
if not lease or string.match(lease, '^(%d+)') ~= token then return 0 end
if redis.call('LINDEX', queue, 0) ~= seq then return 0 end
redis.call('DEL', leaseKey)
if state == 'retry' then
  redis.call('HSET', P .. 'st', seq, 'pending ' .. attempts .. ' ' .. int(now) .. ' ' .. at .. '\n' .. lastError)
  redis.call('ZADD', P .. 'ready', at, session)
  return 1
end
redis.call('LPOP', queue)
redis.call('HSET', P .. 'st', seq, state .. ' ' .. attempts .. ' ' .. int(now) .. ' -\n' .. lastError)
if state == 'dead' then redis.call('ZADD', P .. 'dead', seq, seq)
else redis.call('ZREM', P .. 'undelivered', seq) end
schedule(session)
return 1
