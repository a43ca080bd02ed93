-- Undo a claim whose answer never reached its caller (a timeout, a lost connection). Every
-- buffer it leased and that is still under that lease becomes as if its flush had failed at
-- once: due again at the claim's time, its session still held by it (the lock stays, under
-- `retrying`), so no later batch of the session goes first; any instance may take it now
-- instead of waiting out a lease no one holds. ARGV: token, how long to remember the token as
-- undone (a resent claim with it then takes nothing). Returns the number of buffers given back.
-- @include prelude
local token, keepMs = ARGV[1], tonumber(ARGV[2])
redis.call('SET', P .. 'unclaimed:' .. token, '1', 'PX', keepMs)
local claimKey = P .. 'claim:' .. token
local n = 0
for _, dk in ipairs(redis.call('LRANGE', claimKey, 0, -1)) do
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'claim', 'fence')
  local t, claimedAt = string.match(m[1] or '', '^(%S+) (%d+) ')
  if t == token and m[2] then
    redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
    redis.call('HSET', bm, 'retrying', m[2])
    redis.call('ZADD', P .. 'due', claimedAt, dk)
    n = n + 1
  end
end
redis.call('DEL', claimKey)
return n
