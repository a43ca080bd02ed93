-- The verdict trail shared by every instance (see trail-add.lua): the entries naming any of
-- ARGV (names), each once, oldest first by id as listed; ids trimmed from the stream are
-- skipped. At most 2000 entries. Returns {id, JSON, id, JSON, ...}.
local P = KEYS[1]
local seen = {}
local out = {}
for _, name in ipairs(ARGV) do
  local ids = redis.call('GET', P .. 'tx:' .. name)
  if ids then
    for id in string.gmatch(ids, '%S+') do
      if not seen[id] and #out < 4000 then
        seen[id] = true
        local found = redis.call('XRANGE', P .. 'trail', id, id)
        if found[1] then
          out[#out + 1] = id
          out[#out + 1] = found[1][2][2]
        end
      end
    end
  end
end
return out
