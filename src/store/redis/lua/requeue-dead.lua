-- Put dead letters back at their place (seq order) in their sessions' queues. ARGV: id
-- ('' = the oldest), limit, now. Only records still dead move; returns how many did.
-- @include prelude
-- @include entry
local id, limit, now = ARGV[1], tonumber(ARGV[2]), nowOf(ARGV[3])
local seqs
if id ~= '' then
  local seq = redis.call('HGET', P .. 'ids', id)
  seqs = seq and { seq } or {}
else
  seqs = redis.call('ZRANGE', P .. 'dead', 0, limit - 1)
end
local moved = 0
for _, seq in ipairs(seqs) do
  local e = redis.call('ZREM', P .. 'dead', seq) == 1 and entry(seq)
  if e then
    local session = e[2][6]
    local queue = P .. 'q:' .. session
    -- lastError stays: it tells why the record died, until a new attempt says otherwise
    local lastError = string.match(e[3] or '', '\n(.*)$') or ''
    redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\n' .. lastError)
    -- the first queued seq greater than this one, never before a head a pusher holds
    local first = redis.call('EXISTS', P .. 'pl:' .. session) == 1 and 1 or 0
    local queued = redis.call('LRANGE', queue, first, first + 999)
    local before
    for _, other in ipairs(queued) do
      if tonumber(other) > tonumber(seq) then before = other; break end
    end
    if before then redis.call('LINSERT', queue, 'BEFORE', before, seq) else redis.call('RPUSH', queue, seq) end
    if redis.call('LINDEX', queue, 0) == seq then schedule(session) end
    moved = moved + 1
  end
end
return moved
