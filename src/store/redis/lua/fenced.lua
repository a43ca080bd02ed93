-- Work fenced by a named lease (rules/lease.lua). ARGV: lease name, fence; then, to write,
-- key, value, ttlMs: the shared value `val:<key>` is set only while the lease still has that
-- fence, in one step with the check. Returns 1 when the fence holds (and the value is
-- written), 0 when the lease changed hands (nothing written).
-- @include prelude
-- @include lease
if not fenceHolds(P .. 'lease:' .. ARGV[1], tonumber(ARGV[2])) then return 0 end
if ARGV[3] then redis.call('SET', P .. 'val:' .. ARGV[3], ARGV[4], 'PX', math.max(1, math.floor(tonumber(ARGV[5])))) end
return 1
