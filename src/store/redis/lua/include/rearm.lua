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
  local firstAt, lastAt, commandAt
  for _, p in ipairs(parts) do
    local at, c, unit = string.match(p, '^(%d+) (%d) ([^\n]*)')
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
