-- The verdict trail shared by every instance (src/store/redis/trail.ts): append entries.
-- Keys, under the prefix (KEYS[1]): trail STREAM `<ms>-<n>` -> e (the entry's JSON, no `n`),
-- trail:last STRING `<ms>-<n>` (the newest id given), tx:<name> STRING PX of the ids of the
-- entries naming `name` ("<id> <id> ..."), each kept `retentionMs` after its last entry.
-- Ids are chosen here, with n < 1000, so an entry's sequence `ms * 1000 + n` is exact in a
-- double and grows whatever the server clock does.
-- ARGV: retentionMs, maxEntries, then per entry: its JSON, its count of names, the names.
-- Returns the id of the last entry.
local P = KEYS[1]
local retention = tonumber(ARGV[1])
local maxEntries = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lastMs, lastN = -1, 0
local stamp = redis.call('GET', P .. 'trail:last')
if stamp then
  local dash = string.find(stamp, '-', 1, true)
  lastMs, lastN = tonumber(string.sub(stamp, 1, dash - 1)), tonumber(string.sub(stamp, dash + 1))
end
local i = 3
local id
while i <= #ARGV do
  local ms, n = now, 0
  if ms <= lastMs then
    ms, n = lastMs, lastN + 1
    if n >= 1000 then ms, n = ms + 1, 0 end
  end
  id = string.format('%d-%d', ms, n)
  redis.call('XADD', P .. 'trail', id, 'e', ARGV[i])
  lastMs, lastN = ms, n
  local count = tonumber(ARGV[i + 1])
  for j = i + 2, i + 1 + count do
    local key = P .. 'tx:' .. ARGV[j]
    redis.call('APPEND', key, id .. ' ')
    redis.call('PEXPIRE', key, retention)
  end
  i = i + 2 + count
end
redis.call('SET', P .. 'trail:last', id)
redis.call('XTRIM', P .. 'trail', 'MAXLEN', maxEntries)
redis.call('XTRIM', P .. 'trail', 'MINID', string.format('%d-0', now - retention))
return id
