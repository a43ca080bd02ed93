-- End a session's takeover (`Conversations.endTakeover`). ARGV: sessionKey, now, since ('' = by
-- hand: whatever it is; else only that one, once its until is not after now).
-- Returns the takeover ended (`<since> <until>`), or false when none was.
-- @include prelude
local tk = P .. 'tko:' .. ARGV[1]
local was = redis.call('GET', tk)
if not was then return false end
if ARGV[3] ~= '' then
  local since, untilAt = string.match(was, '^(%S+) (%S+)$')
  if tonumber(since) ~= tonumber(ARGV[3]) or tonumber(untilAt) > nowOf(ARGV[2]) then return false end
end
redis.call('DEL', tk)
return was
