-- Move a leased batch to the outbox. ARGV: debounceKey, sessionKey, fence, part count, now,
-- record id, record sessionKey, createdAt, state, draft JSON, 'turns' (refuse when the session has held messages).
-- Returns {seq, now}, false for a stale fence, or 'held' (refused: commit-turn.lua's turn, they go first).
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
local dk, session, fence, k, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
local id, recordSession, createdAt, state, draft = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
if ARGV[11] == 'turns' and redis.call('EXISTS', P .. 'bm:~turn:' .. session) == 1 then return 'held' end
redis.call('LTRIM', P .. 'buf:' .. dk, k, -1)
local seq = redis.call('INCR', P .. 'seq')
redis.call('XADD', P .. 'out', int(seq) .. '-0', 'i', id, 't', createdAt, 'k', recordSession, 'd', draft)
redis.call('HSET', P .. 'ids', id, seq)
if state == 'pending' then
  redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\n')
  redis.call('ZADD', P .. 'undelivered', seq, seq)
  if redis.call('RPUSH', P .. 'q:' .. recordSession, seq) == 1 then redis.call('ZADD', P .. 'ready', now, recordSession) end
end
releaseSession(session, fence)
rearm(dk)
return { seq, now }
