-- Spend one unit from each budget, all or none (contract §12). ARGV: now ('' = server time),
-- then key, limit, windowMs for each budget. A budget is the sorted set `bud:<key>` of its
-- spends in the window, scored by time; each member is unique (`<at>-<n>`, n from `budseq`), so
-- spends in the same ms each count. Every key is under the store's hash tag: the keys of one
-- call may be of different sessions (a channel's budget).
-- Returns {} when every budget had room (each spent once), else {key, retryAt, ...} for each
-- budget without room (nothing spent).
-- @include prelude
local now = nowOf(ARGV[1])
local budgets, seen, over = {}, {}, {}
for i = 2, #ARGV, 3 do
  local key, limit, windowMs = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if not seen[key] then
    seen[key] = true
    local zk = P .. 'bud:' .. key
    redis.call('ZREMRANGEBYSCORE', zk, '-inf', now - windowMs)
    local count = redis.call('ZCARD', zk)
    if count >= limit then
      -- room comes back when all but limit - 1 of these spends have left the window
      local retryAt = now + windowMs
      if limit > 0 then
        local leaving = redis.call('ZRANGE', zk, count - limit, count - limit, 'WITHSCORES')
        retryAt = tonumber(leaving[2]) + windowMs
      end
      over[#over + 1] = key
      over[#over + 1] = int(retryAt)
    end
    budgets[#budgets + 1] = { zk, windowMs }
  end
end
if #over > 0 then return over end
local n = redis.call('INCR', P .. 'budseq')
for _, b in ipairs(budgets) do
  redis.call('ZADD', b[1], now, int(now) .. '-' .. n)
  redis.call('PEXPIRE', b[1], math.max(1, b[2]))
end
return {}
