-- Move a leased batch to the outbox under its session's turn, or hold it (rules/turn.lua).
-- ARGV: debounceKey, sessionKey, fence, part count, now, record id, record sessionKey,
-- createdAt, state, draft JSON without its body, body, record type, mode, maxMs, maxHeld, the last
-- context seq the output carries ('' none: emitted, the context up to it goes; held, it stays for
-- the output the held batch becomes at its release).
-- Returns {'held', by, until, held count}, {'emitted', seq, now, link field, link id}, or
-- false for a stale fence.
-- @include prelude
-- @include close
-- @include turn
-- @include release-session
-- @include rearm
-- @include held
-- @include append
-- @include context
local dk, session, fence, k, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
local id, recordSession, createdAt, state, head, body, kind = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local mode, maxMs, maxHeld, upTo = ARGV[13], tonumber(ARGV[14]), tonumber(ARGV[15]), ARGV[16]
local meta = redis.call('HMGET', P .. 'bm:' .. dk, 'fence', 'held', 'maxMs')
if meta[1] ~= fence then return false end
local hk = '~turn:' .. session
local hbm = P .. 'bm:' .. hk
local fromHeld = meta[2] ~= false
local turnKey = P .. 'turn:' .. session
local t = redis.call('HMGET', turnKey, 'id', 'until')
local last, open = nil, nil
if t[1] then
  last = t[1]
  if tonumber(t[2]) > now then open = last end
end
local waiting = (not fromHeld) and redis.call('EXISTS', hbm) == 1
local hold, field, linkId, opens = 0, nil, nil, 0
if kind == 'chat.processedMessage' then hold, field, linkId, opens = turnStep(mode, fromHeld, waiting, open, last) end
local buf = P .. 'buf:' .. dk
if hold == 1 then
  -- the turn of held messages: the open one, or the one those already held wait for
  local by, untilAt = last, tonumber(t[2])
  local heldMode = redis.call('HGET', hbm, 'held')
  if not heldMode then
    heldMode = 'collect'
    if mode == 'followup' then heldMode = 'followup' end
    redis.call('HSET', hbm, 'sessionKey', session, 'window', 0, 'maxWait', 0, 'maxMessages', maxHeld, 'held', heldMode, 'maxMs', int(maxMs))
  else
    by, untilAt = redis.call('HGET', hbm, 'by'), tonumber(redis.call('HGET', hbm, 'until'))
  end
  local parts = redis.call('LRANGE', buf, 0, k - 1)
  redis.call('LTRIM', buf, k, -1)
  for i, p in ipairs(parts) do
    local at, unit, json = string.match(p, '^(%d+) %d ([^\n]*)\n(.*)$')
    local closes = '0'
    if heldMode == 'followup' and i == #parts then closes = '1' end
    redis.call('RPUSH', P .. 'buf:' .. hk, at .. ' ' .. closes .. ' ' .. unit .. '\n' .. json)
  end
  releaseSession(session, fence)
  rearm(dk)
  local count = rearmHeld(hk, untilAt, by)
  if redis.call('ZSCORE', P .. 'turns', session) == false then redis.call('ZADD', P .. 'turns', untilAt, session) end
  return { 'held', by, untilAt, count }
end
redis.call('LTRIM', buf, k, -1)
local draft = string.sub(head, 1, -2) .. ',"body":' .. cjson.encode(withLink(body, field, linkId)) .. '}'
local seq = appendRecord(id, recordSession, createdAt, state, draft, now)
releaseSession(session, fence)
clearContext(session, upTo)
if fromHeld then redis.call('HDEL', P .. 'bm:' .. dk, 'fence', 'leaseUntil', 'claim') else rearm(dk) end
if opens == 1 then
  local ms = maxMs
  if fromHeld then ms = tonumber(meta[3]) end
  local untilAt = now + ms
  redis.call('HSET', turnKey, 'id', id, 'at', int(now), 'until', int(untilAt))
  redis.call('PEXPIRE', turnKey, ms + TURN_KEEP_MS)
  redis.call('ZADD', P .. 'turns', untilAt, session)
  redis.call('ZREMRANGEBYSCORE', P .. 'turns', '-inf', now - TURN_KEEP_MS)
  -- what stays held (a followup queue) now waits for this turn
  if fromHeld then rearmHeld(hk, untilAt, id) end
end
return { 'emitted', seq, now, field or '', linkId or '' }
