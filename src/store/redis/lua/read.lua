-- ARGV: 'after', seq, limit | 'id', id | 'dead', limit. Returns entries (see LUA_ENTRY).
-- @include prelude
-- @include entry
local out = {}
if ARGV[1] == 'after' then
  local found = redis.call('XRANGE', P .. 'out', '(' .. ARGV[2] .. '-0', '+', 'COUNT', tonumber(ARGV[3]))
  for _, e in ipairs(found) do
    out[#out + 1] = { e[1], e[2], redis.call('HGET', P .. 'st', string.match(e[1], '^(%d+)')) }
  end
elseif ARGV[1] == 'id' then
  local seq = redis.call('HGET', P .. 'ids', ARGV[2])
  local e = seq and entry(seq)
  if e then out[1] = e end
else
  for _, seq in ipairs(redis.call('ZRANGE', P .. 'dead', 0, tonumber(ARGV[2]) - 1)) do
    local e = entry(seq)
    if e then out[#out + 1] = e end
  end
end
return out
