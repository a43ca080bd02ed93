-- An output by id and the lease on it (contract §15). ARGV: id. Returns nil, or {streamId,
-- fields, state, lease}: lease `<token> <leaseUntil>` while the record is its session's head and
-- leased (run out or not), else false.
-- @include prelude
-- @include entry
local seq = redis.call('HGET', P .. 'ids', ARGV[1])
local e = seq and entry(seq)
if not e then return nil end
local session = e[2][6]
local lease = false
if redis.call('LINDEX', P .. 'q:' .. session, 0) == seq then lease = redis.call('GET', P .. 'pl:' .. session) end
return { e[1], e[2], e[3], lease }
