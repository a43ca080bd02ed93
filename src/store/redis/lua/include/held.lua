-- A session's held buffer (agent turns): `buf:~turn:<session>` and its meta `bm:~turn:<session>`
-- (sessionKey, maxMessages = maxHeld, held = the mode it was held under, maxMs, by = the turn's
-- output id, until = when that turn closes). Its turn is `turn:<session>` (id, at, until), listed
-- in the sorted set `turns` by until.
local TURN_KEEP_MS = 86400000
-- Settle a held buffer's deadline for the turn `by` closing at `untilAt`, or delete it when
-- empty; a leased one is settled by its own commit.
local function rearmHeld(hk, untilAt, by)
  local buf, bm = P .. 'buf:' .. hk, P .. 'bm:' .. hk
  local parts = redis.call('LRANGE', buf, 0, -1)
  if #parts == 0 then
    redis.call('DEL', buf, bm, P .. 'bu:' .. hk)
    redis.call('ZREM', P .. 'due', hk)
    return 0
  end
  redis.call('HSET', bm, 'by', by, 'until', int(untilAt))
  if redis.call('HEXISTS', bm, 'fence') == 1 then return #parts end
  local deadline, reason = heldDeadline(parts, tonumber(redis.call('HGET', bm, 'maxMessages')), untilAt)
  redis.call('HSET', bm, 'deadline', int(deadline), 'reason', reason)
  redis.call('ZADD', P .. 'due', deadline, hk)
  return #parts
end
