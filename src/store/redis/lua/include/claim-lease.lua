-- A claim's lease (contract §15) is a push lease, `pl:<session>` = `<token> <leaseUntil>`, whose
-- key outlives the lease by a day: a lease that ran out stays readable until the head is taken
-- again or answered, so the next claim tells a worker that vanished (`expired`) from a head
-- never leased, and claimOf shows the lease that ran out, as the memory store's queue keeps it.
-- Scripts that read a lease compare its until with `now`, never the key's TTL (server time).
local CLAIM_LEASE_KEPT = 86400000
local function holdClaim(session, token, leaseUntil, now)
  redis.call('SET', P .. 'pl:' .. session, int(token) .. ' ' .. int(leaseUntil),
    'PX', math.max(leaseUntil - now, 1) + CLAIM_LEASE_KEPT)
  redis.call('ZADD', P .. 'ready', leaseUntil, session)
end
