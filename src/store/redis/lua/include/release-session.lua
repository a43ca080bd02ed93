-- Release a session's flush lock when it still holds \`fence\`, and put the buffers of that
-- session that waited for it back at their own deadlines.
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
