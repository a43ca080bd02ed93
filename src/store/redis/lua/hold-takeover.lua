-- A human spoke in a session (`Conversations.holdTakeover`): its takeover `tko:<session>`
-- (`<since> <until>`, kept until end-takeover.lua ends it) started or extended by
-- rules/revise.lua's heldTakeover. ARGV: sessionKey, at, holdMs, maxMs, now.
-- Returns {started 1|0, the takeover, the one it ended or false}.
-- @include prelude
-- @include revise
local tk = P .. 'tko:' .. ARGV[1]
local was = redis.call('GET', tk)
local current
if was then
  local since, untilAt = string.match(was, '^(%S+) (%S+)$')
  current = { tonumber(since), tonumber(untilAt) }
end
local started, takeover, ended =
  heldTakeover(current, tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), nowOf(ARGV[5]))
local held = num(takeover[1]) .. ' ' .. num(takeover[2])
redis.call('SET', tk, held)
return { started and 1 or 0, held, ended and was or false }
