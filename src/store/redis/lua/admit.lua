-- One webhook delivery, all its items, in one script (one round trip, atomic). The time is
-- the server's (`TIME`): every instance stamps arrivals and deadlines with one clock (a
-- store opened with `clock: 'caller'` passes its own, for tests on a fake clock).
--
-- ARGV: now ('' = server time), maxCorrelationGroups, item count, then per item (see `admitArgs` in codec.ts):
--   hasCorrelation, [key, kind, windowMs, time, toleranceS, channel, botId, hasBot,
--   platformId, hasPlatformId, deliveryJson], claim count, [key, space, ttlMs, maxKeys]...,
--   debounceKey, sessionKey, partJson (no id), unit ('' = the part), windowMs, maxWaitMs,
--   maxMessages, closeNow.
-- Returns per item: {'accepted', partId, deadline, group} | {'claimed', index}
--   | {'correlated', retry, group}, where group is the correlation list ({} when none).
-- @include prelude
-- @include close
local now = nowOf(ARGV[1])
local maxGroups = tonumber(ARGV[2])
local items = tonumber(ARGV[3])
local i = 4
local function arg() local v = ARGV[i]; i = i + 1; return v end

-- A sorted set of live keys by expiry: drop expired members and evict the oldest past the
-- cap, a bounded number per call (each call adds at most a few members).
local function bound(zkey, cap, keyPrefix, evictedField, spaceField)
  local expired = redis.call('ZCOUNT', zkey, '-inf', now)
  if expired > 0 then redis.call('ZREMRANGEBYRANK', zkey, 0, math.min(expired, 64) - 1) end
  local over = redis.call('ZCARD', zkey) - cap
  if over > 0 then
    local victims = redis.call('ZRANGE', zkey, 0, math.min(over, 16) - 1)
    for _, member in ipairs(victims) do redis.call('DEL', keyPrefix .. member) end
    redis.call('ZREMRANGEBYRANK', zkey, 0, #victims - 1)
    redis.call('HINCRBY', P .. 'stats', evictedField, #victims)
    if spaceField then redis.call('HINCRBY', P .. 'stats', spaceField, #victims) end
  end
end

local out = {}
for n = 1, items do
  local verdict
  local corr, newGroup
  if arg() == '1' then
    corr = { key = arg(), kind = arg(), window = tonumber(arg()), time = arg(), tolerance = tonumber(arg()),
      channel = arg(), bot = arg(), hasBot = arg() == '1', pid = arg(), hasPid = arg() == '1', delivery = arg() }
    corr.listKey = P .. 'corr:' .. corr.key
    local group = redis.call('LRANGE', corr.listKey, 0, -1)
    if #group > 0 and corr.kind ~= 'message' then
      local time = tonumber(string.match(group[1], '^%S+ (%S+)'))
      if math.abs(time - tonumber(corr.time)) > corr.tolerance then group = {} end
    end
    if #group > 0 then
      local mine
      for j = 2, #group do
        local d = cjson.decode(group[j])
        local bot = d.botId
        if bot == cjson.null then bot = nil end
        if d.channel == corr.channel and ((corr.hasBot and bot == corr.bot) or (not corr.hasBot and bot == nil)) then
          mine = d
          break
        end
      end
      if mine == nil then
        redis.call('RPUSH', corr.listKey, corr.delivery)
        group[#group + 1] = corr.delivery
        verdict = { 'correlated', 0, group }
      elseif corr.kind ~= 'message' or (corr.hasPid and mine.platformId == corr.pid) then
        verdict = { 'correlated', 1, group }
      end
      -- same bot, another platform id: a real repeat, a new group replaces this one
    end
    if verdict == nil then
      newGroup = { corr.kind .. ' ' .. corr.time .. ' ' .. int(now) .. ' ' .. int(now + corr.window), corr.delivery }
    end
  end

  local claimCount = tonumber(arg())
  local claims = {}
  for c = 1, claimCount do claims[c] = { key = arg(), space = arg(), ttl = tonumber(arg()), max = tonumber(arg()) } end
  local dk, session, partJson, unit = arg(), arg(), arg(), arg()
  local window, maxWait, maxMessages, closeNow = tonumber(arg()), tonumber(arg()), tonumber(arg()), arg() == '1'

  if verdict == nil then
    for c = 1, claimCount do
      if redis.call('EXISTS', P .. 'c:' .. claims[c].key) == 1 then
        verdict = { 'claimed', c - 1 }
        break
      end
    end
  end

  if verdict == nil then
    for c = 1, claimCount do
      local claim = claims[c]
      redis.call('SET', P .. 'c:' .. claim.key, '1', 'PX', claim.ttl)
      local space = P .. 'cs:' .. claim.space
      redis.call('ZADD', space, now + claim.ttl, claim.key)
      bound(space, claim.max, P .. 'c:', 'claimsEvicted', 'ev:' .. claim.space)
    end
    if newGroup then
      redis.call('DEL', corr.listKey)
      redis.call('RPUSH', corr.listKey, newGroup[1], newGroup[2])
      redis.call('PEXPIRE', corr.listKey, corr.window)
      redis.call('ZADD', P .. 'corrs', now + corr.window, corr.key)
      bound(P .. 'corrs', maxGroups, P .. 'corr:', 'groupsEvicted')
    end

    local partId = redis.call('INCR', P .. 'pid')
    if unit == '' then unit = 'p' .. partId else unit = 'u' .. unit end
    local buf, bm, bu = P .. 'buf:' .. dk, P .. 'bm:' .. dk, P .. 'bu:' .. dk
    redis.call('RPUSH', buf, int(now) .. (closeNow and ' 1 ' or ' 0 ') .. unit .. '\n{"id":"' .. partId .. '",' .. string.sub(partJson, 2))
    local m = redis.call('HMGET', bm, 'firstAt', 'fence', 'reason', 'deadline', 'window', 'maxWait', 'maxMessages', 'retrying')
    local firstAt = tonumber(m[1])
    if firstAt == nil then
      firstAt = now
      redis.call('HSET', bm, 'firstAt', int(now), 'sessionKey', session, 'window', window, 'maxWait', maxWait, 'maxMessages', maxMessages)
    else
      -- the rule of the part that opened the buffer
      window, maxWait, maxMessages = tonumber(m[5]), tonumber(m[6]), tonumber(m[7])
    end
    redis.call('SADD', bu, unit)
    local deadline, reason
    -- a buffer already closed stays closed: this part waits behind the cut for the next batch
    if m[3] == 'command' or m[3] == 'count' then deadline, reason = tonumber(m[4]), m[3]
    elseif closeNow then deadline, reason = now, 'command'
    elseif redis.call('SCARD', bu) >= maxMessages then deadline, reason = now, 'count'
    else deadline, reason = closeAt(firstAt, now, window, maxWait) end
    redis.call('HSET', bm, 'lastAt', int(now), 'deadline', int(deadline), 'reason', reason)
    -- a leased buffer stays scored at its lease, a retrying one at its retry time; the flush
    -- re-arms it from what remains
    if not m[2] and not m[8] then redis.call('ZADD', P .. 'due', deadline, dk) end
    verdict = { 'accepted', partId, deadline, newGroup or {} }
  end
  out[n] = verdict
end
return out
