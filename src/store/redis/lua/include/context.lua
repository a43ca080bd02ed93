-- A session's context (§12 of the contract): the messages kept since its last output.
-- `ctx:<session>` ZSET seq -> `<seq> <at>\n<message JSON>` (`<seq> <at> <content as a JSON string>\n…`
-- once an edit set its content: rules/revise.lua), `cm:<session>` HASH dropped / until,
-- both forgotten ttlMs after the last append (PEXPIRE; `until` says the same by the caller's
-- `now`); `cseq` INCR numbers every append of the store.
-- Append the messages ARGV[from..], trim the oldest past maxMessages (counted in dropped).
local function appendContext(session, now, maxMessages, ttlMs, from)
  local ck, cm = P .. 'ctx:' .. session, P .. 'cm:' .. session
  local m = redis.call('HMGET', cm, 'dropped', 'until')
  local dropped = 0
  if m[2] and tonumber(m[2]) > now then dropped = tonumber(m[1]) else redis.call('DEL', ck) end
  for i = from, #ARGV do
    local seq = redis.call('INCR', P .. 'cseq')
    redis.call('ZADD', ck, seq, int(seq) .. ' ' .. int(now) .. '\n' .. ARGV[i])
  end
  local n = redis.call('ZCARD', ck)
  if n > maxMessages then
    redis.call('ZREMRANGEBYRANK', ck, 0, n - maxMessages - 1)
    dropped = dropped + n - maxMessages
  end
  redis.call('HSET', cm, 'dropped', dropped, 'until', int(now + ttlMs))
  redis.call('PEXPIRE', cm, ttlMs)
  redis.call('PEXPIRE', ck, ttlMs)
end
-- An output carried the session's context up to seq `upTo` ('' none): those entries go, and the dropped count.
local function clearContext(session, upTo)
  if upTo == nil or upTo == '' then return end
  redis.call('ZREMRANGEBYSCORE', P .. 'ctx:' .. session, '-inf', upTo)
  local cm = P .. 'cm:' .. session
  if redis.call('EXISTS', cm) == 1 then redis.call('HSET', cm, 'dropped', 0) end
end
