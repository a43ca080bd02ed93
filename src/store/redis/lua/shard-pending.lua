-- On a shard: its records the global outbox does not hold yet, oldest first. ARGV: cursor (the
-- shard seq up to which the global outbox holds every record: those are dropped here, ids
-- with them, up to 256 a call), limit. Returns up to `limit` stream entries after the cursor.
-- @include prelude
local cursor, limit = ARGV[1], tonumber(ARGV[2])
local done = redis.call('XRANGE', P .. 'out', '-', cursor .. '-0', 'COUNT', 256)
if #done > 0 then
  local streamIds, ids = {}, {}
  for j, e in ipairs(done) do
    streamIds[j] = e[1]
    ids[j] = e[2][2]
  end
  redis.call('XDEL', P .. 'out', unpack(streamIds))
  redis.call('HDEL', P .. 'ids', unpack(ids))
end
return redis.call('XRANGE', P .. 'out', '(' .. cursor .. '-0', '+', 'COUNT', limit)
