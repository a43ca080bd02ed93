-- On the global keys of a sharded store: append a shard's records to the outbox, in the
-- shard's order, each once. The cursor `cursors[shard]` is the shard seq of the last record
-- appended; a record at cursor + 1 is appended (seq, stream entry, id, push queue: append.lua)
-- and moves it, one at or below it was appended before (a second drainer, a repeated call
-- after a lost answer) and is only looked up, and a gap stops the call. ARGV: shard, then per
-- record: shard seq, id, createdAt, sessionKey, draft, state, commit time.
-- Returns {cursor, {id, global seq (0 when trimmed since), ...}}.
-- @include prelude
-- @include append
local shard = ARGV[1]
local cursor = tonumber(redis.call('HGET', P .. 'cursors', shard) or '0')
local out = {}
for a = 2, #ARGV, 7 do
  local shardSeq, id = tonumber(ARGV[a]), ARGV[a + 1]
  local seq
  if shardSeq == cursor + 1 then
    seq = appendRecord(id, ARGV[a + 3], ARGV[a + 2], ARGV[a + 5], ARGV[a + 4], tonumber(ARGV[a + 6]))
    cursor = shardSeq
  elseif shardSeq <= cursor then
    seq = tonumber(redis.call('HGET', P .. 'ids', id) or '0')
  else
    break
  end
  out[#out + 1] = id
  out[#out + 1] = seq
end
redis.call('HSET', P .. 'cursors', shard, int(cursor))
return { cursor, out }
