-- The outbox append of a shard (the sharded store, `redis-cluster://`): a record goes to the
-- shard's own stream `out` (its seq the shard's, its delivery state `s` and commit time `n`
-- beside it) and its id to the shard's `ids`; no push queue here. The store then appends it to
-- the global outbox (append-drained.lua), which gives it its global seq and queues its push,
-- and the shard drops it on a later call (shard-pending.lua). Same signature as append.lua's.
-- Returns the shard's seq.
local function appendRecord(id, recordSession, createdAt, state, draft, now)
  local seq = redis.call('INCR', P .. 'seq')
  redis.call('XADD', P .. 'out', int(seq) .. '-0', 'i', id, 't', createdAt, 'k', recordSession, 'd', draft, 's', state, 'n', int(now))
  redis.call('HSET', P .. 'ids', id, seq)
  return seq
end
