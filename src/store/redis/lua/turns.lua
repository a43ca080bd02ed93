-- Read turns. ARGV: 'one', sessionKey, now | 'open', limit, now | 'count', 0, now.
-- Returns {sessionKey, output id ('' when none open), openedAt, until, held count} per session:
-- the one asked for, or the open turns and the sessions with held messages; or how many are open.
-- The turns set is scored by when each turn closes: the open ones are those above now.
-- @include prelude
local TURN_KEEP_MS = 86400000
local function view(session, now)
  local t = redis.call('HMGET', P .. 'turn:' .. session, 'id', 'at', 'until')
  local held = redis.call('LLEN', P .. 'buf:~turn:' .. session)
  if t[1] and tonumber(t[3]) > now then return { session, t[1], tonumber(t[2]), tonumber(t[3]), held } end
  return { session, '', 0, 0, held }
end
local now = nowOf(ARGV[3])
if ARGV[1] == 'one' then return { view(ARGV[2], now) } end
if ARGV[1] == 'count' then return redis.call('ZCOUNT', P .. 'turns', '(' .. now, '+inf') end
local limit = tonumber(ARGV[2])
local out = {}
for _, session in ipairs(redis.call('ZRANGEBYSCORE', P .. 'turns', '(' .. now, '+inf', 'LIMIT', 0, limit)) do
  out[#out + 1] = view(session, now)
end
-- Then held messages whose turn just ran out (the scheduler releases them soon): among the
-- latest turns to close, a bounded look.
if #out < limit then
  for _, session in ipairs(redis.call('ZREVRANGEBYSCORE', P .. 'turns', now, now - TURN_KEEP_MS, 'LIMIT', 0, limit * 4)) do
    if #out >= limit then break end
    local v = view(session, now)
    if v[5] > 0 then out[#out + 1] = v end
  end
end
return out
