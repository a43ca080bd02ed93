-- Begin a new life of the outbox's seqs (`outlife`: `<tag> <since>`, identity.ts) once an
-- instance found the store rolled back, unless another instance began one already: only while
-- the life is still the one the caller knew. ARGV: that tag, a new tag, the seq the new life
-- begins after. Absent (the keys were lost), the life begins after 0: every record the store
-- holds was committed since. Returns the life now.
-- @include prelude
local key = P .. 'outlife'
local life = redis.call('GET', key)
if not life then
  life = ARGV[2] .. ' 0'
elseif ARGV[1] ~= '' and string.match(life, '^%S+') == ARGV[1] then
  life = ARGV[2] .. ' ' .. ARGV[3]
else
  return life
end
redis.call('SET', key, life)
return life
