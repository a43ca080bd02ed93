-- Re-arm a buffer from the parts it still holds, or delete it when none are left. With `k`,
-- its first k parts (a committed batch) go first: one LRANGE finds what remains.
-- A buffer of deferred batches (defer.lua) is due at its meta's `deferred`, all its parts one batch.
-- A buffer counts its distinct units in the meta (`units`, and `u1` the first one); the set
-- `bu:` holds them only once there are two or more (most buffers never need it).
local function rearm(dk, k)
  local buf, bm, bu = P .. 'buf:' .. dk, P .. 'bm:' .. dk, P .. 'bu:' .. dk
  local parts = redis.call('LRANGE', buf, k or 0, -1)
  if #parts == 0 then
    redis.call('DEL', buf, bm, bu)
    redis.call('ZREM', P .. 'due', dk)
    return
  end
  if k and k > 0 then redis.call('LTRIM', buf, k, -1) end
  local r = redis.call('HMGET', bm, 'window', 'maxWait', 'maxMessages', 'units', 'deferred')
  local firstAt, lastAt
  local seen, units = {}, {}
  for _, p in ipairs(parts) do
    local at, unit = string.match(p, '^(%d+) %d ([^\n]*)')
    firstAt = firstAt or tonumber(at)
    lastAt = tonumber(at)
    if not seen[unit] then seen[unit] = true; units[#units + 1] = unit end
  end
  if tonumber(r[4] or '2') >= 2 then redis.call('DEL', bu) end
  if #units >= 2 then redis.call('SADD', bu, unpack(units)) end
  -- closed when the part that closed the next batch arrived; else by the window or maxWait
  local size, closed = batchOf(parts, tonumber(r[3]))
  local deadline, reason
  if r[5] then deadline, reason = tonumber(r[5]), 'budget'
  elseif closed then deadline, reason = tonumber(string.match(parts[size], '^(%d+)')), closed
  else deadline, reason = closeAt(firstAt, lastAt, tonumber(r[1]), tonumber(r[2])) end
  redis.call('HDEL', bm, 'fence', 'leaseUntil', 'claim')
  redis.call('HSET', bm, 'firstAt', int(firstAt), 'lastAt', int(lastAt), 'deadline', int(deadline), 'reason', reason,
    'units', #units, 'u1', units[1])
  redis.call('ZADD', P .. 'due', deadline, dk)
end
