-- On a shard: its records the global outbox does not hold yet, oldest first. ARGV: the
-- cursor as the caller last read it from the global keys (append-drained.lua): the shard's
-- life, its seq up to which the global outbox holds every record of that life, and the id of
-- the record at that seq; then limit. Records up to the cursor are dropped here, ids with them,
-- up to 256 a call. Returns {life, up to `limit` stream entries after the cursor}.
--
-- A life (`life`: the server's time in microseconds when it began) is the span over which the
-- shard's seq only grows. A new one begins when the key is missing (a new shard, or its keys
-- were lost: a restart without persistence) or when the shard went back behind the cursor (a
-- failover to a replica that lagged: its seq is below the cursor, the record at the cursor is
-- another one, or its life is older than the cursor's). The seqs of a new life start again, so nothing is dropped under a cursor of
-- another life: every entry is returned, for append-drained.lua to start the new life's cursor.
-- @include prelude
local known, cursor, atCursor, limit = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local lifeKey = P .. 'life'
local life = redis.call('GET', lifeKey)
-- A new life is later than the last one and than the one the caller knows (a clock behind,
-- on a promoted replica, must not make it look older: append-drained.lua skips older lives).
local function begin()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  for _, before in ipairs({ life or '', known }) do
    if before ~= '' and now <= tonumber(before) then now = tonumber(before) + 1 end
  end
  life = string.format('%d', now)
  redis.call('SET', lifeKey, life)
end
if not life or (known ~= '' and tonumber(life) < tonumber(known)) then
  begin() -- a new shard, or one that lost its keys or went back behind a life the global keys hold
elseif life == known and cursor > 0 then
  local seq = tonumber(redis.call('GET', P .. 'seq') or '0')
  local at = redis.call('XRANGE', P .. 'out', cursor .. '-0', cursor .. '-0')
  if seq < cursor or (#at > 0 and at[1][2][2] ~= atCursor) then begin() end
end
if life ~= known then return { life, redis.call('XRANGE', P .. 'out', '-', '+', 'COUNT', limit) } end
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
return { life, redis.call('XRANGE', P .. 'out', '(' .. cursor .. '-0', '+', 'COUNT', limit) }
