-- The outbox is the stream `out` (entry id `<seq>-0`, fields i=id, t=createdAt, k=sessionKey,
-- d=draft JSON); `ids` maps a record id to its seq. Delivery state lives beside it in the hash
-- `st` (seq -> `<state> <attempts> <updatedAt> <nextAttemptAt|->\n<lastError>`), only for records
-- that were ever pending. `undelivered` (pending and dead) and `dead` are sorted sets by seq.
-- The push queue is a list of seqs per session (`q:<session>`), `ready` schedules each
-- session's head (or its lease expiry while a pusher holds it, `pl:<session>`).
--
-- Lua that loads records: `entry(seq)` -> {streamId, fields, state|false}.
local function entry(seq)
  local found = redis.call('XRANGE', P .. 'out', seq .. '-0', seq .. '-0')
  if #found == 0 then return nil end
  return { found[1][1], found[1][2], redis.call('HGET', P .. 'st', seq) }
end
local function schedule(session)
  local head = redis.call('LINDEX', P .. 'q:' .. session, 0)
  if not head then
    redis.call('ZREM', P .. 'ready', session)
    return
  end
  local st = redis.call('HGET', P .. 'st', head) or ''
  local at = string.match(st, '^%S+ %S+ %S+ (%d+)') or '0'
  redis.call('ZADD', P .. 'ready', at, session)
end
