-- Trim from the oldest end of the stream: records too old or beyond the newest keepCount go,
-- stepping over what must stay (pending or dead records, as the embedded stores do), and
-- stopping at the first record a stream has not read or that is neither too old nor beyond the
-- count. Bounded: it looks at ARGV batch records from ARGV start (an exclusive stream id, or
-- '-'). Records after a live hold (keep-unread.lua: a stream cut on any instance) stay too.
-- ARGV: olderThan, keepCount, keepAfterSeq, batch, start, now (caller's clock, or '' for the server's).
-- Returns {removed, next}: next is where a further call goes on, or '' when the trim is done.
-- @include prelude
local olderThan, keepCount, bound, batch, start = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]) + 1, tonumber(ARGV[4]), ARGV[5]
local holds = redis.call('HGETALL', P .. 'holds')
if #holds > 0 then
  local now = nowOf(ARGV[6])
  for j = 1, #holds, 2 do
    local after, untilAt = string.match(holds[j + 1], '^(%d+) (%d+)$')
    if tonumber(untilAt) < now then redis.call('HDEL', P .. 'holds', holds[j])
    elseif tonumber(after) + 1 < bound then bound = tonumber(after) + 1 end
  end
end
local countBound = tonumber(redis.call('GET', P .. 'seq') or '0') - keepCount
local removed, seen, last = 0, 0, nil
for _, e in ipairs(redis.call('XRANGE', P .. 'out', start, '+', 'COUNT', batch)) do
  seen = seen + 1
  local seq = tonumber(string.match(e[1], '^(%d+)'))
  local f = e[2]
  if seq >= bound then return { removed, '' } end
  if seq > countBound and tonumber(f[4]) >= olderThan then return { removed, '' } end
  last = e[1]
  if not redis.call('ZSCORE', P .. 'undelivered', seq) then
    redis.call('XDEL', P .. 'out', e[1])
    redis.call('HDEL', P .. 'ids', f[2])
    redis.call('HDEL', P .. 'st', seq)
    removed = removed + 1
  end
end
if seen < batch or not last then return { removed, '' } end
return { removed, '(' .. last }
