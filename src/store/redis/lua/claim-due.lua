-- Take due buffers. ARGV: now ('' = server time), leaseMs, limit, claim token ('' = none).
-- A buffer of a session whose flush lock is held waits: it is re-scored just after that lease
-- and noted in the session's wait set, so it neither blocks the scan nor waits past the release.
-- With a token, the claim can be repeated and undone: the buffers taken are listed under it
-- (`claim:<token>`, for a lease) and each notes `claim` = `<token> <claimedAt> <reason>`.
-- The same token again (the client resent a claim whose answer a dropped connection lost)
-- answers with the buffers still under it and takes nothing new; a token undone (UNCLAIM_LUA)
-- takes nothing.
-- Returns {debounceKey, sessionKey, fence, leaseUntil, reason, parts}.
-- @include prelude
-- @include lock
-- @include close
local now, leaseMs, limit, token = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] or ''
local due = P .. 'due'
local claimKey = P .. 'claim:' .. token
if token ~= '' and redis.call('EXISTS', P .. 'unclaimed:' .. token) == 1 then return {} end
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
