-- A session's flush lock: `<fence> <heldUntil>[w] <debounceKey>`, the buffer that holds the session
-- (leased, or retrying after a failed flush). Past `heldUntil` the session stays held for as long
-- as that buffer still has the lock's fence (its owner died, or nobody retried it yet): the
-- holder is taken over first, and no later batch of the session overtakes it. The key lives a
-- day; a lock whose holder moved on is free whatever it says. A `w` after `heldUntil` says that
-- buffers of the session wait in `wait:<session>` for the lock's release (release-session.lua
-- reads that set only then); a marker lost to a rewrite only delays them to their re-score.
local LOCK_KEEP_MS = 86400000
local function setLock(session, fence, heldUntil, dk, waiters)
  redis.call('SET', P .. 'lock:' .. session, fence .. ' ' .. int(heldUntil) .. (waiters and 'w' or '') .. ' ' .. dk, 'PX', LOCK_KEEP_MS)
end
-- Take a free session's lock at once (one command when nobody holds it): true when taken.
local function takeLock(session, fence, heldUntil, dk)
  return redis.call('SET', P .. 'lock:' .. session, fence .. ' ' .. int(heldUntil) .. ' ' .. dk, 'NX', 'PX', LOCK_KEEP_MS) ~= false
end
local function lockParts(lock)
  local fence, heldUntil, w, holder = string.match(lock, '^(%d+) (%d+)(w?) ?(.*)$')
  return fence, tonumber(heldUntil), w == 'w', holder
end
-- until when the session is held against buffer dk (retrying with fence `retrying`), or nil;
-- and, held or not, whether buffers wait for the lock, and the lock itself
local function heldAgainst(session, dk, retrying, now)
  local lock = redis.call('GET', P .. 'lock:' .. session)
  if not lock then return nil, false, nil end
  local fence, heldUntil, waiters, holder = lockParts(lock)
  if holder == dk or (retrying and retrying == fence) then return nil, waiters, lock end
  if heldUntil > now then return heldUntil, waiters, lock end
  if holder == '' then return nil, waiters, lock end
  local h = redis.call('HMGET', P .. 'bm:' .. holder, 'fence', 'retrying')
  if h[1] == fence or h[2] == fence then return now, waiters, lock end
  return nil, waiters, lock
end
