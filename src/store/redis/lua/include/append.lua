-- Append one record to the outbox: its seq, its stream entry, its id in the index and, when it
-- waits for the agent, its delivery state and its place in its session's push queue. Returns the seq.
local function appendRecord(id, recordSession, createdAt, state, draft, now)
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('XADD', P .. 'out', int(seq) .. '-0', 'i', id, 't', createdAt, 'k', recordSession, 'd', draft)
  redis.call('HSET', P .. 'ids', id, seq)
  if state == 'pending' then
    redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\n')
    redis.call('ZADD', P .. 'undelivered', seq, seq)
    if redis.call('RPUSH', P .. 'q:' .. recordSession, seq) == 1 then redis.call('ZADD', P .. 'ready', now, recordSession) end
  end
  return seq
end
