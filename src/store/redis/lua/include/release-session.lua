-- Release a session's flush lock when it still holds `fence` (GETDEL: one command; a lock of
-- another fence, rare, is put back), and put the buffers of that session that waited for it
-- back at their own deadlines (only when the lock says some wait: see lock.lua).
local function releaseSession(session, fence)
  local lockKey = P .. 'lock:' .. session
  local lock = redis.call('GETDEL', lockKey)
  if not lock then return end
  local held, waiters = string.match(lock, '^(%d+) %d+(w?)')
  if waiters == 'w' then
    local waitKey = P .. 'wait:' .. session
    local waiting = redis.call('SMEMBERS', waitKey)
    for _, dk in ipairs(waiting) do
      local m = redis.call('HMGET', P .. 'bm:' .. dk, 'deadline', 'fence')
      if m[1] and not m[2] then redis.call('ZADD', P .. 'due', m[1], dk) end
    end
    if #waiting > 0 then redis.call('DEL', waitKey) end
    lock = (string.gsub(lock, '^(%d+ %d+)w', '%1'))
  end
  if held ~= fence then redis.call('SET', lockKey, lock, 'PX', 86400000) end
end
