-- A session's conversation: {its activation override (nil when none), its dropped count, then
-- its kept entries oldest first (include/context.lua), none once its time is up by `now` and
-- none read with 'override'}, its live revisions' JSON oldest first (rules/revise.lua), and its
-- takeover (`<since> <until>`, nil when none). ARGV: sessionKey, now, 'override' (optional).
-- @include prelude
-- @include revise
local session, now = ARGV[1], nowOf(ARGV[2])
local conversation = { redis.call('HGET', P .. 'activation', session), 0 }
if ARGV[3] ~= 'override' then
  local m = redis.call('HMGET', P .. 'cm:' .. session, 'dropped', 'until')
  if m[2] and tonumber(m[2]) > now then
    conversation[2] = tonumber(m[1])
    for _, entry in ipairs(redis.call('ZRANGE', P .. 'ctx:' .. session, 0, -1)) do
      conversation[#conversation + 1] = entry
    end
  end
end
local revisions = {}
for i, kept in ipairs(keptRevisions(redis.call('LRANGE', P .. 'rev:' .. session, 0, -1), now)) do
  revisions[i] = string.match(kept, '\n(.*)$')
end
return { conversation, revisions, redis.call('GET', P .. 'tko:' .. session) }
