-- Claims (contract §15): claim-push.lua with each head's attempt counted as it is taken. ARGV:
-- now, leaseMs, limit. Returns {streamId, fields, state, token, leaseUntil, expired 0|1} per head
-- taken, `state` already counting this attempt.
-- @include prelude
-- @include entry
-- @include claim-lease
local now, leaseMs, limit = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for _, session in ipairs(redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, math.min(limit * 2, 1000))) do
  if #out >= limit then break end
  local lease = redis.call('GET', P .. 'pl:' .. session)
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
      local attempts, nextAt, lastError = string.match(e[3] or '', '^%S+ (%d+) %S+ (%S+)\n(.*)$')
      local state = 'pending ' .. int((tonumber(attempts) or 0) + 1) .. ' ' .. int(now) .. ' '
        .. (nextAt or int(now)) .. '\n' .. (lastError or '')
      redis.call('HSET', P .. 'st', head, state)
      local token = redis.call('INCR', P .. 'ptoken')
      local leaseUntil = now + leaseMs
      holdClaim(session, token, leaseUntil, now)
      out[#out + 1] = { e[1], e[2], state, token, leaseUntil, lease and 1 or 0 }
    end
  end
end
return out
