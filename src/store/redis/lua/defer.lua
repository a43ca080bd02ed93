-- Defer a leased batch over its budget (contract §12): its parts leave the buffer as commit.lua
-- takes them (the fence checked, the session released, the buffer re-armed from later parts)
-- and join the session's buffer `deferKey` (`~budget:<session>\0<budget>`), with no command
-- mark, after what it holds (a batch taken from that buffer itself goes back in front). Its
-- meta says `deferred` = when it is due (the later of its own and dueAt), and a count no
-- batch reaches: include/rearm.lua settles it there, claim-due.lua takes all its parts at once.
-- ARGV: debounceKey, sessionKey, fence, part count, now, deferKey, dueAt.
-- Returns 1, or false for a stale fence (nothing changes).
-- @include prelude
-- @include close
-- @include release-session
-- @include rearm
-- no batch of a deferred buffer is cut by the count: it is due as one
local DEFERRED_COUNT = '1000000000000000'
local dk, session, fence, k, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
local tk, dueAt = ARGV[6], tonumber(ARGV[7])
if redis.call('HGET', P .. 'bm:' .. dk, 'fence') ~= fence then return false end
local moved = {}
for i, p in ipairs(redis.call('LRANGE', P .. 'buf:' .. dk, 0, k - 1)) do
  local at, unit, json = string.match(p, '^(%d+) %d ([^\n]*)\n(.*)$')
  moved[i] = at .. ' 0 ' .. unit .. '\n' .. json
end
releaseSession(session, fence)
rearm(dk, k)
local tbuf, tbm = P .. 'buf:' .. tk, P .. 'bm:' .. tk
if tk == dk then
  for i = #moved, 1, -1 do redis.call('LPUSH', tbuf, moved[i]) end
elseif #moved > 0 then
  redis.call('RPUSH', tbuf, unpack(moved))
end
local was = tonumber(redis.call('HGET', tbm, 'deferred') or '')
if was then
  redis.call('HSET', tbm, 'deferred', int(math.max(was, dueAt)))
else
  redis.call('HSET', tbm, 'sessionKey', session, 'window', 0, 'maxWait', 0, 'maxMessages', DEFERRED_COUNT,
    'deferred', int(dueAt))
end
if redis.call('HEXISTS', tbm, 'fence') == 0 then rearm(tk) end
return 1
