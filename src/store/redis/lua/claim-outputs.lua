-- Claims (contract §15): claim-push.lua with each head's attempt counted as it is taken. ARGV:
-- now, leaseMs, limit. Returns {streamId, fields, state, token, leaseUntil, expired 0|1} per head
-- taken, `state` already counting this attempt.
-- @include prelude
-- @include entry
-- @include claim-lease
-- @include due-heads
local now, leaseMs, limit = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
return takeDueHeads(now, limit, function(session, head, e, lease)
  local attempts, nextAt, lastError = string.match(e[3] or '', '^%S+ (%d+) %S+ (%S+)\n(.*)$')
  local state = 'pending ' .. int((tonumber(attempts) or 0) + 1) .. ' ' .. int(now) .. ' '
    .. (nextAt or int(now)) .. '\n' .. (lastError or '')
  redis.call('HSET', P .. 'st', head, state)
  local token = redis.call('INCR', P .. 'ptoken')
  local leaseUntil = now + leaseMs
  holdClaim(session, token, leaseUntil, now)
  return { e[1], e[2], state, token, leaseUntil, lease and 1 or 0 }
end)
