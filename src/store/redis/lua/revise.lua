-- Record a recall or an edit of a session's message (`Conversations.revise`), in one step: kept
-- with the session's revisions `rev:<session>` (rules/revise.lua), applied to its kept context,
-- and looked for in the buffers named, whose flush lease it ends where it finds the message.
-- ARGV: sessionKey, now (the caller's: revisions and context), leaseNow ('' = server time: the
-- clock leases run on), maxRevisions, ttlMs, kind, messageId, messageId as a JSON string, the
-- revision's at, revision JSON, an edit's content as a JSON string, then the debounce keys.
-- Returns {recorded, buffered, context}, each 1 or 0.
-- @include prelude
-- @include lock
-- @include revise
local session, now, leaseNow = ARGV[1], tonumber(ARGV[2]), nowOf(ARGV[3])
local maxRevisions, ttlMs = math.max(1, tonumber(ARGV[4])), tonumber(ARGV[5])
local kind, messageId, quotedId, at = ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9])

-- A message recalled already changes nothing; an edit replaces an earlier edit of its message.
local rk = P .. 'rev:' .. session
local list = {}
for _, kept in ipairs(keptRevisions(redis.call('LRANGE', rk, 0, -1), now)) do
  local k, id = string.match(kept, '^%S+ (%S+) ([^\n]*)')
  if id ~= quotedId then list[#list + 1] = kept elseif k == 'recall' then return { 0, 0, 0 } end
end
list[#list + 1] = num(at + ttlMs) .. ' ' .. kind .. ' ' .. quotedId .. '\n' .. ARGV[10]
-- at most maxRevisions, the oldest go; the key lives as long as its latest revision
local keep, latest = {}, now
for i = math.max(1, #list - maxRevisions + 1), #list do
  keep[#keep + 1] = list[i]
  latest = math.max(latest, tonumber(string.match(list[i], '^(%S+)')))
end
redis.call('DEL', rk)
redis.call('RPUSH', rk, unpack(keep))
redis.call('PEXPIRE', rk, math.max(1, math.ceil(latest - now)))

-- The kept context, while it lasts: a ZREM that empties the set drops its TTL with it, so the
-- set gets back the one it had.
local context = 0
local contextUntil = redis.call('HGET', P .. 'cm:' .. session, 'until')
if contextUntil and tonumber(contextUntil) > now then
  local ck = P .. 'ctx:' .. session
  local ttl = redis.call('PTTL', ck)
  local flat, entries = redis.call('ZRANGE', ck, 0, -1, 'WITHSCORES'), {}
  for i = 1, #flat, 2 do entries[#entries + 1] = { flat[i], flat[i + 1] } end
  local removed, added = revisedContext(entries, kind, messageId, quotedId, ARGV[11])
  if #removed > 0 then
    context = 1
    redis.call('ZREM', ck, unpack(removed))
    for _, entry in ipairs(added) do redis.call('ZADD', ck, entry[1], entry[2]) end
    if #added > 0 and ttl > 0 then redis.call('PEXPIRE', ck, ttl) end
  end
end

-- Whether another bot's copy of the message is in correlation group `key` (`corr:<key>`, written
-- by admit.lua in the script that buffered the part, so under this hash tag too: a header
-- `<kind> <time> <firstAt> <expiresAt>`, then each delivery's JSON), as `correlation(key, now)`
-- reads it: a group is over at its expiry by the clock leases run on, as admit.lua ends it.
-- Each group is read once per call.
local groups = {}
local function copyIn(key)
  if groups[key] == nil then
    groups[key] = false
    local group = redis.call('LRANGE', P .. 'corr:' .. key, 0, -1)
    if #group > 0 and tonumber(string.match(group[1], '^%S+ %S+ %S+ (%S+)')) > leaseNow then
      for j = 2, #group do
        if string.find(group[j], quotedId, 1, true) and cjson.decode(group[j]).platformId == messageId then
          groups[key] = true
          break
        end
      end
    end
  end
  return groups[key]
end

-- Whether a part of buffer dk is the message: its event's platformId, else its id (prelude.lua:
-- the part JSON follows the header line; the quoted id finds a candidate without decoding all),
-- or, for a part of a correlation group, another bot's id for it there.
local function holds(dk)
  for _, p in ipairs(redis.call('LRANGE', P .. 'buf:' .. dk, 0, -1)) do
    local json = string.match(p, '\n(.*)$')
    if json and (string.find(json, quotedId, 1, true) or string.find(json, '"correlationKey":', 1, true)) then
      local part = cjson.decode(json)
      local id = part.event.platformId
      if id == nil or id == cjson.null then id = part.event.id end
      if id == messageId then return true end
      local key = part.correlationKey
      if type(key) == 'string' and copyIn(key) then return true end
    end
  end
  return false
end

-- A buffer under a flush lease loses it: a fence nobody holds, the lease ended at leaseNow (the
-- token of its claim forgotten, so a resent claim does not hand it out), due at once, and the
-- session's lock moved along with it as renew.lua moves it, so claim-due.lua takes the buffer
-- over first and no later batch of the session overtakes it.
local function endLease(dk)
  local bm = P .. 'bm:' .. dk
  local m = redis.call('HMGET', bm, 'fence', 'leaseUntil')
  if not m[1] then return end
  local fence = int(redis.call('INCR', P .. 'fence'))
  local leaseUntil = math.min(tonumber(m[2] or leaseNow), leaseNow)
  redis.call('HDEL', bm, 'claim')
  redis.call('HSET', bm, 'fence', fence, 'leaseUntil', int(leaseUntil))
  redis.call('ZADD', P .. 'due', leaseUntil, dk)
  local lock = redis.call('GET', P .. 'lock:' .. session)
  if not lock or string.match(lock, '^(%d+)') == m[1] then
    setLock(session, fence, leaseUntil, dk, lock and string.find(lock, '^%d+ %d+w') ~= nil)
  end
end

local buffered = 0
for i = 12, #ARGV do
  local dk = ARGV[i]
  if redis.call('HGET', P .. 'bm:' .. dk, 'sessionKey') == session and holds(dk) then
    buffered = 1
    endLease(dk)
  end
end
return { 1, buffered, context }
