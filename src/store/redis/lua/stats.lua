-- ARGV: claim space names. Returns {claim keys, claims evicted, groups, groups evicted,
-- then the evictions of each space in ARGV order}.
-- @include prelude
local keys = 0
for _, space in ipairs(ARGV) do keys = keys + redis.call('ZCARD', P .. 'cs:' .. space) end
local evicted = redis.call('HMGET', P .. 'stats', 'claimsEvicted', 'groupsEvicted')
local out = { keys, tonumber(evicted[1]) or 0, redis.call('ZCARD', P .. 'corrs'), tonumber(evicted[2]) or 0 }
for _, space in ipairs(ARGV) do out[#out + 1] = tonumber(redis.call('HGET', P .. 'stats', 'ev:' .. space)) or 0 end
return out
