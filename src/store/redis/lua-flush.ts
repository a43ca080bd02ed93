import { LUA_CLOSE_AT, LUA_LOCK, LUA_PRELUDE, LUA_REARM, LUA_RELEASE_SESSION } from './lua-buffer.js';

/**
 * Take due buffers. ARGV: now ('' = server time), leaseMs, limit, claim token ('' = none).
 * A buffer of a session whose flush lock is held waits: it is re-scored just after that lease
 * and noted in the session's wait set, so it neither blocks the scan nor waits past the release.
 * With a token, the claim can be repeated and undone: the buffers taken are listed under it
 * (`claim:<token>`, for a lease) and each notes `claim` = `<token> <claimedAt> <reason>`.
 * The same token again (the client resent a claim whose answer a dropped connection lost)
 * answers with the buffers still under it and takes nothing new; a token undone (UNCLAIM_LUA)
 * takes nothing.
 * Returns {debounceKey, sessionKey, fence, leaseUntil, reason, parts}.
 */
export const CLAIM_DUE_LUA = `${LUA_PRELUDE}${LUA_LOCK}
local now, leaseMs, limit, token = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] or ''
local due = P .. 'due'
local claimKey = P .. 'claim:' .. token
if token ~= '' and redis.call('EXISTS', P .. 'unclaimed:' .. token) == 1 then return {} end
-- The next batch: parts up to the first command, or up to the part whose unit reached
-- maxMessages (later parts of that album included); parts past it arrived after the buffer
-- closed and wait for the next batch.
local function batchOf(parts, maxMessages)
  local units, count = {}, 0
  for i, p in ipairs(parts) do
    local c, unit = string.match(p, '^%d+ (%d) ([^\\n]*)')
    if c == '1' then return i end
    if not units[unit] then units[unit] = true; count = count + 1 end
    if count >= maxMessages then
      local j = i
      while j < #parts do
        local c2, u2 = string.match(parts[j + 1], '^%d+ (%d) ([^\\n]*)')
        if c2 == '1' or not units[u2] then break end
        j = j + 1
      end
      return j
    end
  end
  return #parts
end
local function batchFor(dk, maxMessages)
  local parts = redis.call('LRANGE', P .. 'buf:' .. dk, 0, -1)
  local batch = {}
  for i = 1, batchOf(parts, tonumber(maxMessages) or 1) do batch[i] = parts[i] end
  return batch
end
local out = {}
if token ~= '' and redis.call('EXISTS', claimKey) == 1 then
  for _, dk in ipairs(redis.call('LRANGE', claimKey, 0, -1)) do
    local m = redis.call('HMGET', P .. 'bm:' .. dk, 'sessionKey', 'fence', 'leaseUntil', 'claim', 'maxMessages')
    local t, _, reason = string.match(m[4] or '', '^(%S+) (%d+) (%S+)$')
    if t == token and m[2] then out[#out + 1] = { dk, m[1], tonumber(m[2]), tonumber(m[3]), reason, batchFor(dk, m[5]) } end
  end
  return out
end
local candidates = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, math.min(limit * 4, 1000))
for _, dk in ipairs(candidates) do
  if #out >= limit then break end
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'sessionKey', 'fence', 'reason', 'maxMessages', 'retrying')
  if not m[1] then
    redis.call('ZREM', due, dk)
  else
    local heldUntil = heldAgainst(m[1], dk, m[5], now)
    if heldUntil then
      -- just after the holder's own score: should its owner die, the holder is taken over first
      redis.call('ZADD', due, heldUntil + 1, dk)
      redis.call('SADD', P .. 'wait:' .. m[1], dk)
    else
      local fence = redis.call('INCR', P .. 'fence')
      local leaseUntil = now + leaseMs
      local reason = m[2] and 'takeover' or m[3]
      setLock(m[1], int(fence), leaseUntil, dk)
      redis.call('HSET', bm, 'fence', fence, 'leaseUntil', int(leaseUntil))
      redis.call('HDEL', bm, 'retrying', 'claim')
      if token ~= '' then
        redis.call('HSET', bm, 'claim', token .. ' ' .. int(now) .. ' ' .. reason)
        redis.call('RPUSH', claimKey, dk)
      end
      redis.call('ZADD', due, leaseUntil, dk)
      out[#out + 1] = { dk, m[1], fence, leaseUntil, reason, batchFor(dk, m[4]) }
    end
  end
end
if token ~= '' and #out > 0 then redis.call('PEXPIRE', claimKey, leaseMs) end
return out
`;

/**
 * Undo a claim whose answer never reached its caller (a timeout, a lost connection). Every
 * buffer it leased and that is still under that lease becomes as if its flush had failed at
 * once: due again at the claim's time, its session still held by it (the lock stays, under
 * `retrying`), so no later batch of the session goes first; any instance may take it now
 * instead of waiting out a lease no one holds. ARGV: token, how long to remember the token as
 * undone (a resent claim with it then takes nothing). Returns the number of buffers given back.
 */
export const UNCLAIM_LUA = `${LUA_PRELUDE}
local token, keepMs = ARGV[1], tonumber(ARGV[2])
redis.call('SET', P .. 'unclaimed:' .. token, '1', 'PX', keepMs)
local claimKey = P .. 'claim:' .. token
local n = 0
for _, dk in ipairs(redis.call('LRANGE', claimKey, 0, -1)) do
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'claim', 'fence')
  local t, claimedAt = string.match(m[1] or '', '^(%S+) (%d+) ')
  if t == token and m[2] then
    redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
    redis.call('HSET', bm, 'retrying', m[2])
    redis.call('ZADD', P .. 'due', claimedAt, dk)
    n = n + 1
  end
end
redis.call('DEL', claimKey)
return n
`;

/** ARGV: debounceKey, sessionKey, fence, now, leaseMs. Returns 1, or 0 for a stale fence. */
export const RENEW_LUA = `${LUA_PRELUDE}${LUA_LOCK}
local dk, session, fence, now, leaseMs = ARGV[1], ARGV[2], ARGV[3], nowOf(ARGV[4]), tonumber(ARGV[5])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
local leaseUntil = now + leaseMs
redis.call('HSET', bm, 'leaseUntil', int(leaseUntil))
redis.call('ZADD', P .. 'due', leaseUntil, dk)
local lock = redis.call('GET', P .. 'lock:' .. session)
if not lock or string.match(lock, '^(%d+)') == fence then setLock(session, fence, leaseUntil, dk) end
return 1
`;

/**
 * Move a leased batch to the outbox. ARGV: debounceKey, sessionKey, fence, part count, now,
 * record id, record sessionKey, createdAt, state, draft JSON.
 * Returns {seq, now}, or false for a stale fence.
 */
export const COMMIT_LUA = `${LUA_PRELUDE}${LUA_CLOSE_AT}${LUA_RELEASE_SESSION}${LUA_REARM}
local dk, session, fence, k, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
local id, recordSession, createdAt, state, draft = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
redis.call('LTRIM', P .. 'buf:' .. dk, k, -1)
local seq = redis.call('INCR', P .. 'seq')
redis.call('XADD', P .. 'out', int(seq) .. '-0', 'i', id, 't', createdAt, 'k', recordSession, 'd', draft)
redis.call('HSET', P .. 'ids', id, seq)
if state == 'pending' then
  redis.call('HSET', P .. 'st', seq, 'pending 0 ' .. int(now) .. ' ' .. int(now) .. '\\n')
  redis.call('ZADD', P .. 'undelivered', seq, seq)
  if redis.call('RPUSH', P .. 'q:' .. recordSession, seq) == 1 then redis.call('ZADD', P .. 'ready', now, recordSession) end
end
releaseSession(session, fence)
rearm(dk)
return { seq, now }
`;

/**
 * Give a lease back after a failed flush. ARGV: debounceKey, sessionKey, fence, retryAt, leaseMs.
 * The session stays held by this buffer until it commits (any instance retries it from
 * `retryAt`), so no later batch of the session overtakes it.
 * Returns 1, or 0 for a stale fence.
 */
export const RELEASE_LUA = `${LUA_PRELUDE}${LUA_LOCK}
local dk, session, fence, retryAt, leaseMs = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
redis.call('HSET', bm, 'deadline', int(retryAt), 'retrying', fence)
setLock(session, fence, retryAt + leaseMs, dk)
redis.call('ZADD', P .. 'due', retryAt, dk)
return 1
`;

/**
 * The earliest score in a sorted set whose member is not leased, looking at a bounded head
 * (a leased head yields its lease expiry: a takeover would be due then). ARGV: set name,
 * lease-test prefix, lease-test field ('' = key existence).
 */
export const EARLIEST_LUA = `${LUA_PRELUDE}
local head = redis.call('ZRANGE', P .. ARGV[1], 0, 15, 'WITHSCORES')
for j = 1, #head, 2 do
  local key = P .. ARGV[2] .. head[j]
  local leased
  if ARGV[3] == '' then leased = redis.call('EXISTS', key) == 1 else leased = redis.call('HEXISTS', key, ARGV[3]) == 1 end
  if not leased then return head[j + 1] end
end
return head[2]
`;
