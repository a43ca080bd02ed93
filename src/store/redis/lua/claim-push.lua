-- ARGV: now, leaseMs, limit. Returns {session, entry..., token, leaseUntil} per lease.
-- @include prelude
-- @include entry
-- @include due-heads
local now, leaseMs, limit = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
return takeDueHeads(now, limit, function(session, _, e)
  local token = redis.call('INCR', P .. 'ptoken')
  local leaseUntil = now + leaseMs
  redis.call('SET', P .. 'pl:' .. session, int(token) .. ' ' .. int(leaseUntil), 'PX', leaseMs)
  redis.call('ZADD', P .. 'ready', leaseUntil, session)
  return { e[1], e[2], e[3], token, leaseUntil }
end)
