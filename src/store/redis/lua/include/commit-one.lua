-- @include append
-- @include context
-- Move one leased batch to the outbox: the fence checked, the record appended (seq, stream
-- entry, id index, and the push queue when it waits for the agent), the session released and
-- the buffer re-armed from what arrived meanwhile, and the session's context up to `upTo` cleared. With unlessHeld = 'turns', refused ('held')
-- while the session has held messages (commit-turn.lua then puts the batch behind them).
-- `values`: shared values to write first (the output's message ids: their names and values
-- from ARGV[from] on, `count` pairs, for ttlMs), so none of them is missing once it commits.
-- Returns {seq, now}, false for a stale fence, or 'held'.
local function commitOne(dk, session, fence, k, now, id, recordSession, createdAt, state, draft, unlessHeld, upTo, values)
  if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
  for i = values.from, values.from + 2 * values.count - 1, 2 do
    redis.call('SET', P .. 'val:' .. ARGV[i], ARGV[i + 1], 'PX', values.ttlMs)
  end
  if unlessHeld == 'turns' and redis.call('EXISTS', P .. 'bm:~turn:' .. session) == 1 then return 'held' end
  local seq = appendRecord(id, recordSession, createdAt, state, draft, now)
  releaseSession(session, fence)
  rearm(dk, k)
  clearContext(session, upTo)
  return { seq, now }
end
