-- A session's flush lock: `<fence> <heldUntil> <debounceKey>`, the buffer that holds the session
-- (leased, or retrying after a failed flush). Past `heldUntil` the session stays held for as long
-- as that buffer still has the lock's fence (its owner died, or nobody retried it yet): the
-- holder is taken over first, and no later batch of the session overtakes it. The key lives a
-- day; a lock whose holder moved on is free whatever it says.
local LOCK_KEEP_MS = 86400000
local function setLock(session, fence, heldUntil, dk)
  redis.call('SET', P .. 'lock:' .. session, fence .. ' ' .. int(heldUntil) .. ' ' .. dk, 'PX', LOCK_KEEP_MS)
end
-- until when the session is held against buffer dk (retrying with fence `retrying`), or nil
local function heldAgainst(session, dk, retrying, now)
  local lock = redis.call('GET', P .. 'lock:' .. session)
  if not lock then return nil end
  local fence, heldUntil, holder = string.match(lock, '^(%d+) (%d+) ?(.*)$')
  heldUntil = tonumber(heldUntil)
  if holder == dk or (retrying and retrying == fence) then return nil end
  if heldUntil > now then return heldUntil end
  if holder == '' then return nil end
  local h = redis.call('HMGET', P .. 'bm:' .. holder, 'fence', 'retrying')
  if h[1] == fence or h[2] == fence then return now end
  return nil
end
