-- Move one leased batch to the outbox: the fence checked, the record appended (seq, stream
-- entry, id index, and the push queue when it waits for the agent), the session released and
-- the buffer re-armed from what arrived meanwhile. With unlessHeld = 'turns', refused ('held')
-- while the session has held messages (commit-turn.lua then puts the batch behind them).
-- Returns {seq, now}, false for a stale fence, or 'held'.
local function commitOne(dk, session, fence, k, now, id, recordSession, createdAt, state, draft, unlessHeld)
  if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
  if unlessHeld == 'turns' and redis.call('EXISTS', P .. 'bm:~turn:' .. session) == 1 then return 'held' end
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('XADD', P .. 'out', int(seq) .. '-0', 'i', id, 't', createdAt, 'k', recordSession, 'd', draft)
  redis.call('HSET', P .. 'ids', id, seq)
  if state == 'pending' then
    redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\n')
    redis.call('ZADD', P .. 'undelivered', seq, seq)
    if redis.call('RPUSH', P .. 'q:' .. recordSession, seq) == 1 then redis.call('ZADD', P .. 'ready', now, recordSession) end
  end
  releaseSession(session, fence)
  rearm(dk, k)
  return { seq, now }
end
