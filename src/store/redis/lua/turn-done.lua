-- Close the turn an output opened, when it is still open: its held buffer is due now.
-- ARGV: output id, now, and its sessionKey when the caller knows it (a shard of the sharded
-- store: the output is in the global outbox, not here). Returns {'unknown'} or
-- {'closed'|'already', sessionKey, held count}.
-- @include prelude
-- @include turn
-- @include held
local id, now, session = ARGV[1], nowOf(ARGV[2]), ARGV[3]
if session == nil or session == '' then
  local seq = redis.call('HGET', P .. 'ids', id)
  if not seq then return { 'unknown' } end
  local found = redis.call('XRANGE', P .. 'out', seq .. '-0', seq .. '-0')
  if #found == 0 then return { 'unknown' } end
  local fields = found[1][2]
  for i = 1, #fields, 2 do if fields[i] == 'k' then session = fields[i + 1] end end
end
local turnKey = P .. 'turn:' .. session
local hk = '~turn:' .. session
local held = redis.call('LLEN', P .. 'buf:' .. hk)
-- `closed`: the output whose turn a done closed, so that a second done is answered 'already'
-- whatever the clock of the instance it reaches (one behind would still see `until` ahead).
local t = redis.call('HMGET', turnKey, 'id', 'until', 'closed')
if t[1] ~= id or t[3] == id or tonumber(t[2]) <= now then return { 'already', session, held } end
if held > 0 then
  redis.call('HSET', turnKey, 'until', int(now), 'closed', id)
  redis.call('ZADD', P .. 'turns', now, session)
  rearmHeld(hk, now, id)
else
  redis.call('DEL', turnKey)
  redis.call('ZREM', P .. 'turns', session)
end
return { 'closed', session, held }
