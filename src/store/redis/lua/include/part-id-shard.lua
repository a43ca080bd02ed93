-- A part's id on a shard of the sharded store: the shard's count `pid`, then `.` and the shard's
-- number (its key prefix is `{<keyPrefix>~<shard>~<n>}:`), unique across shards, growing in each.
local PART_SUFFIX = '.' .. string.match(P, '~(%d+)~%d+}:$')
