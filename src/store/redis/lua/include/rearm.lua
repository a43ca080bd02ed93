-- Re-arm a buffer from the parts it still holds, or delete it when none are left.
local function rearm(dk)
  local buf, bm, bu = P .. 'buf:' .. dk, P .. 'bm:' .. dk, P .. 'bu:' .. dk
  local parts = redis.call('LRANGE', buf, 0, -1)
  if #parts == 0 then
    redis.call('DEL', buf, bm, bu)
    redis.call('ZREM', P .. 'due', dk)
    return
  end
  redis.call('DEL', bu)
  local r = redis.call('HMGET', bm, 'window', 'maxWait', 'maxMessages')
  local firstAt, lastAt
  for _, p in ipairs(parts) do
    local at, unit = string.match(p, '^(%d+) %d ([^\n]*)')
    firstAt = firstAt or tonumber(at)
    lastAt = tonumber(at)
    redis.call('SADD', bu, unit)
  end
  -- closed when the part that closed the next batch arrived; else by the window or maxWait
  local size, closed = batchOf(parts, tonumber(r[3]))
  local deadline, reason
  if closed then deadline, reason = tonumber(string.match(parts[size], '^(%d+)')), closed
  else deadline, reason = closeAt(firstAt, lastAt, tonumber(r[1]), tonumber(r[2])) end
  redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
  redis.call('HSET', bm, 'firstAt', int(firstAt), 'lastAt', int(lastAt), 'deadline', int(deadline), 'reason', reason)
  redis.call('ZADD', P .. 'due', deadline, dk)
end
