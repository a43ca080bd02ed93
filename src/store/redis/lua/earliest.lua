-- The earliest score in a sorted set whose member is not leased, looking at a bounded head
-- (a leased head yields its lease expiry: a takeover would be due then). ARGV: set name,
-- lease-test prefix, lease-test field ('' = key existence).
-- @include prelude
local head = redis.call('ZRANGE', P .. ARGV[1], 0, 15, 'WITHSCORES')
for j = 1, #head, 2 do
  local key = P .. ARGV[2] .. head[j]
  local leased
  if ARGV[3] == '' then leased = redis.call('EXISTS', key) == 1 else leased = redis.call('HEXISTS', key, ARGV[3]) == 1 end
  if not leased then return head[j + 1] end
end
return head[2]
