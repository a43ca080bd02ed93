-- Take due buffers. ARGV: now ('' = server time), leaseMs, limit, claim token ('' = none), the
-- caller's now for the conversations (as conversation.lua reads them; '' = server time).
-- A buffer of a session whose flush lock is held waits: it is re-scored just after that lease
-- and noted in the session's wait set, so it neither blocks the scan nor waits past the release.
-- With a token, the claim can be repeated and undone: the buffers taken are listed under it
-- (`claim:<token>`, for a lease) and each notes `claim` = `<token> <claimedAt> <reason>`.
-- The same token again (the client resent a claim whose answer a dropped connection lost)
-- answers with the buffers still under it and takes nothing new; a token undone (UNCLAIM_LUA)
-- takes nothing.
-- Returns {debounceKey, sessionKey, fence, leaseUntil, reason, parts, conversation}, where
-- conversation is the session's as its flush decides by (include/conversation-state.lua): read
-- here, in the step that leases the batch, the flush needs no call of its own for it.
-- @include prelude
-- @include lock
-- @include close
-- @include conversation-state
local now, leaseMs, limit, token = nowOf(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] or ''
local readNow = (ARGV[5] == nil or ARGV[5] == '') and now or tonumber(ARGV[5])
local due = P .. 'due'
local claimKey = P .. 'claim:' .. token
-- a new token (nearly every claim) has neither key: one EXISTS says so
local resent = token ~= '' and redis.call('EXISTS', P .. 'unclaimed:' .. token, claimKey) > 0
if resent and redis.call('EXISTS', P .. 'unclaimed:' .. token) == 1 then return {} end
local function batchFor(dk, maxMessages)
  local parts = redis.call('LRANGE', P .. 'buf:' .. dk, 0, -1)
  local batch = {}
  for i = 1, batchOf(parts, tonumber(maxMessages) or 1) do batch[i] = parts[i] end
  return batch
end
local out = {}
if resent then
  for _, dk in ipairs(redis.call('LRANGE', claimKey, 0, -1)) do
    local m = redis.call('HMGET', P .. 'bm:' .. dk, 'sessionKey', 'fence', 'leaseUntil', 'claim', 'maxMessages')
    local t, _, reason = string.match(m[4] or '', '^(%S+) (%d+) (%S+)$')
    if t == token and m[2] then
      out[#out + 1] = { dk, m[1], tonumber(m[2]), tonumber(m[3]), reason, batchFor(dk, m[5]), leasedConversation(m[1], readNow) }
    end
  end
  return out
end
local candidates = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, math.min(limit * 4, 1000))
-- fences come in one block for the call (INCRBY), not one INCR per buffer; unused ones are skipped
local fence, lastFence = 0, -1
local claimed = {}
for _, dk in ipairs(candidates) do
  if #out >= limit then break end
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'sessionKey', 'fence', 'reason', 'maxMessages', 'retrying')
  if not m[1] then
    redis.call('ZREM', due, dk)
  else
    if fence > lastFence then
      lastFence = redis.call('INCRBY', P .. 'fence', math.min(#candidates, limit))
      fence = lastFence - math.min(#candidates, limit) + 1
    end
    local leaseUntil = now + leaseMs
    local taken = takeLock(m[1], int(fence), leaseUntil, dk)
    local heldUntil, waiters, lock
    if not taken then heldUntil, waiters, lock = heldAgainst(m[1], dk, m[5], now) end
    if heldUntil then
      -- just after the holder's own score: should its owner die, the holder is taken over first
      redis.call('ZADD', due, heldUntil + 1, dk)
      redis.call('SADD', P .. 'wait:' .. m[1], dk)
      if not waiters then redis.call('SET', P .. 'lock:' .. m[1], (string.gsub(lock, '^(%d+ %d+)', '%1w')), 'KEEPTTL') end
    else
      if not taken then setLock(m[1], int(fence), leaseUntil, dk, waiters) end
      local reason = m[2] and 'takeover' or m[3]
      if m[5] then redis.call('HDEL', bm, 'retrying') end
      if token ~= '' then
        redis.call('HSET', bm, 'fence', fence, 'leaseUntil', int(leaseUntil), 'claim', token .. ' ' .. int(now) .. ' ' .. reason)
        claimed[#claimed + 1] = dk
      else
        redis.call('HDEL', bm, 'claim')
        redis.call('HSET', bm, 'fence', fence, 'leaseUntil', int(leaseUntil))
      end
      redis.call('ZADD', due, leaseUntil, dk)
      out[#out + 1] = { dk, m[1], fence, leaseUntil, reason, batchFor(dk, m[4]), leasedConversation(m[1], readNow) }
      fence = fence + 1
    end
  end
end
if #claimed > 0 then
  redis.call('RPUSH', claimKey, unpack(claimed))
  redis.call('PEXPIRE', claimKey, leaseMs)
end
return out
