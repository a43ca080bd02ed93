-- On the global keys of a sharded store: append a shard's records to the outbox, in the
-- shard's order, each once. The cursor `cursors[shard]` is `<life> <seq> <id>`: the shard's life
-- (shard-pending.lua), the shard seq of the last record of that life appended, and its id.
-- A record at the cursor's seq + 1 is appended (seq, stream entry, id, push queue: append.lua)
-- and moves the cursor; one at or below it was appended before (a second drainer, a repeated
-- call after a lost answer) and is only looked up; a gap past the first record stops the call
-- (a shard's entries are contiguous: it never comes). Two cases move the
-- cursor to the first record of a call: a new life of the shard (or no cursor: a new store, or
-- the global keys were lost), and a gap before it within one life (the global keys went back:
-- the records in between were appended to what was lost, then dropped from the shard). A
-- record whose id the outbox holds already (a shard that went back and gave its records again)
-- is only looked up. Records read from an older life than the cursor's (the shard was reset
-- after the read) are only looked up.
-- ARGV: shard, the shard's life, then per record: shard seq, id, createdAt, sessionKey, draft,
-- state, commit time. Returns {life, cursor seq, cursor id, {id, global seq (0 when trimmed
-- since, or never appended), ...}}.
-- @include prelude
-- @include append
local shard, life = ARGV[1], ARGV[2]
local known, cursor, atCursor = string.match(redis.call('HGET', P .. 'cursors', shard) or '', '^(%d+) (%d+) (.*)$')
cursor = tonumber(cursor or '0')
atCursor = atCursor or ''
local stale = known ~= nil and tonumber(life) < tonumber(known)
if not stale and life ~= known then known, cursor, atCursor = life, 0, '' end
local out = {}
for a = 3, #ARGV, 7 do
  local shardSeq, id = tonumber(ARGV[a]), ARGV[a + 1]
  local seq = tonumber(redis.call('HGET', P .. 'ids', id) or '0')
  if stale or shardSeq <= cursor then
    -- appended before: looked up only
  elseif shardSeq == cursor + 1 or a == 3 then
    if seq == 0 then seq = appendRecord(id, ARGV[a + 3], ARGV[a + 2], ARGV[a + 5], ARGV[a + 4], tonumber(ARGV[a + 6])) end
    cursor, atCursor = shardSeq, id
  else
    break
  end
  out[#out + 1] = id
  out[#out + 1] = seq
end
if not stale then redis.call('HSET', P .. 'cursors', shard, known .. ' ' .. int(cursor) .. ' ' .. atCursor) end
return { known, cursor, atCursor, out }
