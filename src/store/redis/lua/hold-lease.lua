-- Take or renew a named lease. ARGV: name, holder, ttlMs, now (the caller's clock, or '' for
-- the server's). Returns the fence, or false while another holder's time runs.
-- A drop (ARGV[5] = 'drop') ends the holder's time at once, keeping the fence.
-- @include prelude
-- @include lease
local key = P .. 'lease:' .. ARGV[1]
if ARGV[5] == 'drop' then
  if redis.call('HGET', key, 'holder') == ARGV[2] then redis.call('HSET', key, 'until', '0') end
  return false
end
return leaseAfter(key, ARGV[2], tonumber(ARGV[3]), nowOf(ARGV[4]))
