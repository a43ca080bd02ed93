-- A session's conversation: its activation override (nil when none), its dropped count, then
-- its kept entries oldest first (include/context.lua), none once its time is up by `now`.
-- ARGV: sessionKey, now.
-- @include prelude
local session, now = ARGV[1], nowOf(ARGV[2])
local activation = redis.call('HGET', P .. 'activation', session)
local m = redis.call('HMGET', P .. 'cm:' .. session, 'dropped', 'until')
if not m[2] or tonumber(m[2]) <= now then return { activation, 0 } end
local out = { activation, tonumber(m[1]) }
for _, entry in ipairs(redis.call('ZRANGE', P .. 'ctx:' .. session, 0, -1)) do out[#out + 1] = entry end
return out
