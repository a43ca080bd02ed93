-- Move a held claim's lease end later (contract §15). ARGV: session, seq, token, leaseUntil, now.
-- Returns 1, or 0 (nothing changed) when the token no longer holds the head or its lease ran out.
-- @include prelude
-- @include claim-lease
local session, seq, token, leaseUntil, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), nowOf(ARGV[5])
local lease = redis.call('GET', P .. 'pl:' .. session)
local held, heldUntil = string.match(lease or '', '^(%d+) (%d+)')
if held ~= token or tonumber(heldUntil) < now then return 0 end
if redis.call('LINDEX', P .. 'q:' .. session, 0) ~= seq then return 0 end
if leaseUntil > tonumber(heldUntil) then holdClaim(session, token, leaseUntil, now) end
return 1
