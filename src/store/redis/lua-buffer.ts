/**
 * Lua shared by the scripts that keep a debounce buffer: its parts, its meta and its place in
 * `due`. Every script receives the key prefix (`{ai}:`) as KEYS[1], so Redis Cluster routes
 * it to the one slot all keys share; the other keys are built from it inside the script.
 *
 * A buffered part is stored as one list element: `<arrivedAt> <closeNow 0|1> <unit>\n<part JSON>`,
 * where `unit` is `u<JSON string>` (a caller's unit, JSON-quoted so it holds no newline) or
 * `p<partId>`. The header lets a script re-arm a buffer from the parts left after a flush
 * without decoding any JSON.
 */
export const LUA_PRELUDE = `
local P = KEYS[1]
local function int(n) return string.format('%d', n) end
local function redisNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- the caller's clock when given (leases and schedules), else the server's
local function nowOf(arg)
  if arg == nil or arg == '' then return redisNow() end
  return tonumber(arg)
end
`;

/**
 * A session's flush lock: `<fence> <heldUntil> <debounceKey>`, the buffer that holds the session
 * (leased, or retrying after a failed flush). Past `heldUntil` the session stays held for as long
 * as that buffer still has the lock's fence (its owner died, or nobody retried it yet): the
 * holder is taken over first, and no later batch of the session overtakes it. The key lives a
 * day; a lock whose holder moved on is free whatever it says.
 */
export const LUA_LOCK = `
local LOCK_KEEP_MS = 86400000
local function setLock(session, fence, heldUntil, dk)
  redis.call('SET', P .. 'lock:' .. session, fence .. ' ' .. int(heldUntil) .. ' ' .. dk, 'PX', LOCK_KEEP_MS)
end
-- until when the session is held against buffer dk (retrying with fence \`retrying\`), or nil
local function heldAgainst(session, dk, retrying, now)
  local lock = redis.call('GET', P .. 'lock:' .. session)
  if not lock then return nil end
  local fence, heldUntil, holder = string.match(lock, '^(%d+) (%d+) ?(.*)$')
  heldUntil = tonumber(heldUntil)
  if holder == dk or (retrying and retrying == fence) then return nil end
  if heldUntil > now then return heldUntil end
  if holder == '' then return nil end
  local h = redis.call('HMGET', P .. 'bm:' .. holder, 'fence', 'retrying')
  if h[1] == fence or h[2] == fence then return now end
  return nil
end
`;

/** When a buffer closes, from its distinct units and arrival times (no command among them). */
export const LUA_CLOSE_AT = `
local function closeAt(units, firstAt, lastAt, window, maxWait, maxMessages)
  if units >= maxMessages then return lastAt, 'count' end
  local w, m = lastAt + window, firstAt + maxWait
  if w <= m then return w, 'window' end
  return m, 'max_wait'
end
`;

/**
 * Release a session's flush lock when it still holds \`fence\`, and put the buffers of that
 * session that waited for it back at their own deadlines.
 */
export const LUA_RELEASE_SESSION = `
local function releaseSession(session, fence)
  local lockKey = P .. 'lock:' .. session
  local lock = redis.call('GET', lockKey)
  if lock and string.match(lock, '^(%d+)') == fence then redis.call('DEL', lockKey) end
  local waitKey = P .. 'wait:' .. session
  local waiting = redis.call('SMEMBERS', waitKey)
  for _, dk in ipairs(waiting) do
    local m = redis.call('HMGET', P .. 'bm:' .. dk, 'deadline', 'fence')
    if m[1] and not m[2] then redis.call('ZADD', P .. 'due', m[1], dk) end
  end
  if #waiting > 0 then redis.call('DEL', waitKey) end
end
`;

/** Re-arm a buffer from the parts it still holds, or delete it when none are left. */
export const LUA_REARM = `
local function rearm(dk)
  local buf, bm, bu = P .. 'buf:' .. dk, P .. 'bm:' .. dk, P .. 'bu:' .. dk
  local parts = redis.call('LRANGE', buf, 0, -1)
  if #parts == 0 then
    redis.call('DEL', buf, bm, bu)
    redis.call('ZREM', P .. 'due', dk)
    return
  end
  redis.call('DEL', bu)
  local firstAt, lastAt, commandAt
  for _, p in ipairs(parts) do
    local at, c, unit = string.match(p, '^(%d+) (%d) ([^\\n]*)')
    at = tonumber(at)
    firstAt = firstAt or at
    lastAt = at
    if c == '1' and not commandAt then commandAt = at end
    redis.call('SADD', bu, unit)
  end
  local r = redis.call('HMGET', bm, 'window', 'maxWait', 'maxMessages')
  local deadline, reason
  if commandAt then deadline, reason = commandAt, 'command'
  else deadline, reason = closeAt(redis.call('SCARD', bu), firstAt, lastAt, tonumber(r[1]), tonumber(r[2]), tonumber(r[3])) end
  redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
  redis.call('HSET', bm, 'firstAt', int(firstAt), 'lastAt', int(lastAt), 'deadline', int(deadline), 'reason', reason)
  redis.call('ZADD', P .. 'due', deadline, dk)
end
`;
