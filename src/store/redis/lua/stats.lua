-- ARGV: claim space names. Returns {claim keys, claims evicted, groups, groups evicted}.
-- @include prelude
local keys = 0
for _, space in ipairs(ARGV) do keys = keys + redis.call('ZCARD', P .. 'cs:' .. space) end
local evicted = redis.call('HMGET', P .. 'stats', 'claimsEvicted', 'groupsEvicted')
return { keys, tonumber(evicted[1]) or 0, redis.call('ZCARD', P .. 'corrs'), tonumber(evicted[2]) or 0 }
