-- ARGV: now, leaseMs, limit. Returns {session, entry..., token, leaseUntil} per lease.
-- @include prelude
-- @include entry
local now, leaseMs, limit = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for _, session in ipairs(redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, math.min(limit * 2, 1000))) do
  if #out >= limit then break end
  local leaseKey = P .. 'pl:' .. session
  local lease = redis.call('GET', leaseKey)
  local heldUntil = lease and tonumber(string.match(lease, '^%d+ (%d+)'))
  if heldUntil and heldUntil > now then
    redis.call('ZADD', P .. 'ready', heldUntil, session)
  else
    local head = redis.call('LINDEX', P .. 'q:' .. session, 0)
    local e = head and entry(head)
    if not e then
      -- an empty queue, or a head trimmed away by hand: drop it and look again next time
      if head then redis.call('LPOP', P .. 'q:' .. session) end
      schedule(session)
    else
      local token = redis.call('INCR', P .. 'ptoken')
      local leaseUntil = now + leaseMs
      redis.call('SET', leaseKey, int(token) .. ' ' .. int(leaseUntil), 'PX', leaseMs)
      redis.call('ZADD', P .. 'ready', leaseUntil, session)
      out[#out + 1] = { e[1], e[2], e[3], token, leaseUntil }
    end
  end
end
return out
