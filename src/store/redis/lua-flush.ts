import { LUA_CLOSE_AT, LUA_PRELUDE, LUA_REARM, LUA_RELEASE_SESSION } from './lua-buffer.js';

/**
 * Take due buffers. ARGV: now ('' = server time), leaseMs, limit.
 * A buffer of a session whose flush lock is held waits: it is re-scored to that lease and
 * noted in the session's wait set, so it neither blocks the scan nor waits past the release.
 * Returns {debounceKey, sessionKey, fence, leaseUntil, reason, parts}.
 */
export const CLAIM_DUE_LUA = `${LUA_PRELUDE}
local now, leaseMs, limit = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local due = P .. 'due'
local candidates = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, math.min(limit * 4, 1000))
local out = {}
for _, dk in ipairs(candidates) do
  if #out >= limit then break end
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'sessionKey', 'fence', 'reason')
  if not m[1] then
    redis.call('ZREM', due, dk)
  else
    local lockKey = P .. 'lock:' .. m[1]
    local lock = redis.call('GET', lockKey)
    local heldUntil = lock and tonumber(string.match(lock, '^%d+ (%d+)'))
    if heldUntil and heldUntil > now then
      redis.call('ZADD', due, heldUntil, dk)
      redis.call('SADD', P .. 'wait:' .. m[1], dk)
    else
      local fence = redis.call('INCR', P .. 'fence')
      local leaseUntil = now + leaseMs
      redis.call('SET', lockKey, int(fence) .. ' ' .. int(leaseUntil), 'PX', leaseMs)
      redis.call('HSET', bm, 'fence', fence, 'leaseUntil', int(leaseUntil))
      redis.call('ZADD', due, leaseUntil, dk)
      out[#out + 1] = { dk, m[1], fence, leaseUntil, m[2] and 'takeover' or m[3], redis.call('LRANGE', P .. 'buf:' .. dk, 0, -1) }
    end
  end
end
return out
`;

/** ARGV: debounceKey, sessionKey, fence, now, leaseMs. Returns 1, or 0 for a stale fence. */
export const RENEW_LUA = `${LUA_PRELUDE}
local dk, session, fence, now, leaseMs = ARGV[1], ARGV[2], ARGV[3], nowOf(ARGV[4]), tonumber(ARGV[5])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
local leaseUntil = now + leaseMs
redis.call('HSET', bm, 'leaseUntil', int(leaseUntil))
redis.call('ZADD', P .. 'due', leaseUntil, dk)
redis.call('SET', P .. 'lock:' .. session, fence .. ' ' .. int(leaseUntil), 'PX', leaseMs)
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

/** ARGV: debounceKey, sessionKey, fence, retryAt. Returns 1, or 0 for a stale fence. */
export const RELEASE_LUA = `${LUA_PRELUDE}${LUA_RELEASE_SESSION}
local dk, session, fence, retryAt = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local bm = P .. 'bm:' .. dk
if redis.call('HGET', bm, 'fence') ~= fence then return 0 end
redis.call('HDEL', bm, 'fence', 'leaseUntil')
redis.call('HSET', bm, 'deadline', int(retryAt))
releaseSession(session, fence)
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
