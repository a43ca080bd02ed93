-- Named leases: the store rule of lease.ts beside this file, line for line; the store test
-- kit's lease cases run against every store. A lease is a HASH holder / until / fence; a
-- dropped one keeps its row with its time up, so its fence keeps growing.

-- Take or renew the lease at `key` for `holder` until now + ttlMs: its fence, or false while
-- another holder's time runs.
local function leaseAfter(key, holder, ttlMs, now)
  local row = redis.call('HMGET', key, 'holder', 'until', 'fence')
  if row[1] and row[1] ~= holder and tonumber(row[2]) > now then return false end
  local fence = tonumber(row[3] or '0')
  if row[1] ~= holder then fence = fence + 1 end
  redis.call('HSET', key, 'holder', holder, 'until', string.format('%d', now + ttlMs), 'fence', fence)
  return fence
end

-- Whether a holder's work under `fence` may still land: the lease at `key` has not changed hands
-- since (its time may be up).
local function fenceHolds(key, fence)
  local kept = redis.call('HGET', key, 'fence')
  return kept ~= false and tonumber(kept) == fence
end
