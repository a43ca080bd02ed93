-- The push queue's due heads (claim-push.lua, claim-outputs.lua): up to `limit` sessions due by
-- `now` whose head no lease still holds; a held one is scheduled at its lease's end, an empty
-- queue (or a head trimmed away by hand) dropped and looked at again next time.
-- `take(session, head, e, lease)` leases each head (`head`: its seq, `e`: its entry, `lease`:
-- the run-out lease's value or nil) and returns its reply row.
local function takeDueHeads(now, limit, take)
  local out = {}
  for _, session in ipairs(redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, math.min(limit * 2, 1000))) do
    if #out >= limit then break end
    local lease = redis.call('GET', P .. 'pl:' .. session)
    local heldUntil = lease and tonumber(string.match(lease, '^%d+ (%d+)'))
    if heldUntil and heldUntil > now then
      redis.call('ZADD', P .. 'ready', heldUntil, session)
    else
      local head = redis.call('LINDEX', P .. 'q:' .. session, 0)
      local e = head and entry(head)
      if not e then
        if head then redis.call('LPOP', P .. 'q:' .. session) end
        schedule(session)
      else
        out[#out + 1] = take(session, head, e, lease)
      end
    end
  end
  return out
end
