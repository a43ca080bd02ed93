import { LUA_PRELUDE } from './lua-buffer.js';

/*
 * The outbox is the stream `out` (entry id `<seq>-0`, fields i=id, t=createdAt, k=sessionKey,
 * d=draft JSON); `ids` maps a record id to its seq. Delivery state lives beside it in the hash
 * `st` (seq -> `<state> <attempts> <updatedAt> <nextAttemptAt|->\n<lastError>`), only for records
 * that were ever pending. `undelivered` (pending and dead) and `dead` are sorted sets by seq.
 * The push queue is a list of seqs per session (`q:<session>`), `ready` schedules each
 * session's head (or its lease expiry while a pusher holds it, `pl:<session>`).
 */

/** Lua that loads records: `entry(seq)` -> {streamId, fields, state|false}. */
const LUA_ENTRY = `
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
`;

/** ARGV: 'after', seq, limit | 'id', id | 'dead', limit. Returns entries (see LUA_ENTRY). */
export const READ_LUA = `${LUA_PRELUDE}${LUA_ENTRY}
local out = {}
if ARGV[1] == 'after' then
  local found = redis.call('XRANGE', P .. 'out', '(' .. ARGV[2] .. '-0', '+', 'COUNT', tonumber(ARGV[3]))
  for _, e in ipairs(found) do
    out[#out + 1] = { e[1], e[2], redis.call('HGET', P .. 'st', string.match(e[1], '^(%d+)')) }
  end
elseif ARGV[1] == 'id' then
  local seq = redis.call('HGET', P .. 'ids', ARGV[2])
  local e = seq and entry(seq)
  if e then out[1] = e end
else
  for _, seq in ipairs(redis.call('ZRANGE', P .. 'dead', 0, tonumber(ARGV[2]) - 1)) do
    local e = entry(seq)
    if e then out[#out + 1] = e end
  end
end
return out
`;

/**
 * Trim from the oldest end of the stream: records too old or beyond the newest keepCount go,
 * stepping over what must stay (pending or dead records, as the embedded stores do), and
 * stopping at the first record a stream has not read or that is neither too old nor beyond the
 * count. Bounded: it looks at ARGV batch records from ARGV start (an exclusive stream id, or
 * '-'). ARGV: olderThan, keepCount, keepAfterSeq, batch, start.
 * Returns {removed, next}: next is where a further call goes on, or '' when the trim is done.
 */
export const TRIM_LUA = `${LUA_PRELUDE}
local olderThan, keepCount, bound, batch, start = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) + 1, tonumber(ARGV[4]), ARGV[5]
local countBound = tonumber(redis.call('GET', P .. 'seq') or '0') - keepCount
local removed, seen, last = 0, 0, nil
for _, e in ipairs(redis.call('XRANGE', P .. 'out', start, '+', 'COUNT', batch)) do
  seen = seen + 1
  local seq = tonumber(string.match(e[1], '^(%d+)'))
  local f = e[2]
  if seq >= bound then return { removed, '' } end
  if seq > countBound and tonumber(f[4]) >= olderThan then return { removed, '' } end
  last = e[1]
  if not redis.call('ZSCORE', P .. 'undelivered', seq) then
    redis.call('XDEL', P .. 'out', e[1])
    redis.call('HDEL', P .. 'ids', f[2])
    redis.call('HDEL', P .. 'st', seq)
    removed = removed + 1
  end
end
if seen < batch or not last then return { removed, '' } end
return { removed, '(' .. last }
`;

/** ARGV: now, leaseMs, limit. Returns {session, entry..., token, leaseUntil} per lease. */
export const CLAIM_PUSH_LUA = `${LUA_PRELUDE}${LUA_ENTRY}
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
`;

/**
 * ARGV: session, seq, token, state (delivered|retry|dead), attempts, at, lastError, now.
 * Returns 1, or 0 when the token is stale.
 */
export const ACK_PUSH_LUA = `${LUA_PRELUDE}${LUA_ENTRY}
local session, seq, token, state, attempts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local at, lastError, now = ARGV[6], ARGV[7], nowOf(ARGV[8])
local leaseKey, queue = P .. 'pl:' .. session, P .. 'q:' .. session
local lease = redis.call('GET', leaseKey)
if not lease or string.match(lease, '^(%d+)') ~= token then return 0 end
if redis.call('LINDEX', queue, 0) ~= seq then return 0 end
redis.call('DEL', leaseKey)
if state == 'retry' then
  redis.call('HSET', P .. 'st', seq, 'pending ' .. attempts .. ' ' .. int(now) .. ' ' .. at .. '\\n' .. lastError)
  redis.call('ZADD', P .. 'ready', at, session)
  return 1
end
redis.call('LPOP', queue)
redis.call('HSET', P .. 'st', seq, state .. ' ' .. attempts .. ' ' .. int(now) .. ' -\\n' .. lastError)
if state == 'dead' then redis.call('ZADD', P .. 'dead', seq, seq)
else redis.call('ZREM', P .. 'undelivered', seq) end
schedule(session)
return 1
`;

/**
 * Put dead letters back at their place (seq order) in their sessions' queues. ARGV: id
 * ('' = the oldest), limit, now. Only records still dead move; returns how many did.
 */
export const REQUEUE_DEAD_LUA = `${LUA_PRELUDE}${LUA_ENTRY}
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
    redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\\n')
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
`;

/** ARGV: claim space names. Returns {claim keys, claims evicted, groups, groups evicted}. */
export const STATS_LUA = `${LUA_PRELUDE}
local keys = 0
for _, space in ipairs(ARGV) do keys = keys + redis.call('ZCARD', P .. 'cs:' .. space) end
local evicted = redis.call('HMGET', P .. 'stats', 'claimsEvicted', 'groupsEvicted')
return { keys, tonumber(evicted[1]) or 0, redis.call('ZCARD', P .. 'corrs'), tonumber(evicted[2]) or 0 }
`;
