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
-- @include part-id
local now = nowOf(ARGV[1])
local maxGroups = tonumber(ARGV[2])
local items = tonumber(ARGV[3])
local i = 4
local function arg() local v = ARGV[i]; i = i + 1; return v end

-- A sorted set of live keys by expiry, capped: past the cap, its expired members go first (not
-- evictions), then the oldest live ones, a bounded number per call (each call adds at most a few
-- members). Expired members are otherwise swept now and then (`sweep`) and by the stats script.
local function bound(zkey, cap, keyPrefix, evictedField, spaceField)
  local over = redis.call('ZCARD', zkey) - cap
  if over <= 0 then return end
  redis.call('ZREMRANGEBYSCORE', zkey, '-inf', now)
  over = redis.call('ZCARD', zkey) - cap
  if over > 0 then
    local victims = redis.call('ZRANGE', zkey, 0, math.min(over, 16) - 1)
    if keyPrefix then for _, member in ipairs(victims) do redis.call('DEL', keyPrefix .. member) end end
    redis.call('ZREMRANGEBYRANK', zkey, 0, #victims - 1)
    redis.call('HINCRBY', P .. 'stats', evictedField, #victims)
    if spaceField then redis.call('HINCRBY', P .. 'stats', spaceField, #victims) end
  end
end
-- one admitted part in 64 sweeps the expired claims of its spaces
local function sweep(partId, claims)
  if partId % 64 ~= 0 then return end
  for _, claim in ipairs(claims) do redis.call('ZREMRANGEBYSCORE', P .. 'cs:' .. claim.space, '-inf', now) end
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
    -- ended at its expiry by `now` (the key's PEXPIRE ends it by the server's clock, the same
    -- one unless the store runs on its caller's)
    if #group > 0 and tonumber(string.match(group[1], '^%S+ %S+ %S+ (%S+)')) <= now then group = {} end
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

  -- A claim is a member of its space's sorted set, scored by its expiry: ZADD NX takes a new one
  -- in one command; an expired one is taken again; a live one makes the item a duplicate (and
  -- undoes the claims this item took before it).
  if verdict == nil then
    for c = 1, claimCount do
      local claim = claims[c]
      local space = P .. 'cs:' .. claim.space
      if redis.call('ZADD', space, 'NX', now + claim.ttl, claim.key) == 0 then
        if tonumber(redis.call('ZSCORE', space, claim.key)) > now then
          for u = 1, c - 1 do redis.call('ZREM', P .. 'cs:' .. claims[u].space, claims[u].key) end
          verdict = { 'claimed', c - 1 }
          break
        end
        redis.call('ZADD', space, now + claim.ttl, claim.key)
      end
    end
  end

  if verdict == nil then
    for c = 1, claimCount do bound(P .. 'cs:' .. claims[c].space, claims[c].max, nil, 'claimsEvicted', 'ev:' .. claims[c].space) end
    if newGroup then
      redis.call('DEL', corr.listKey)
      redis.call('RPUSH', corr.listKey, newGroup[1], newGroup[2])
      redis.call('PEXPIRE', corr.listKey, corr.window)
      redis.call('ZADD', P .. 'corrs', now + corr.window, corr.key)
      bound(P .. 'corrs', maxGroups, P .. 'corr:', 'groupsEvicted')
    end

    local count = redis.call('INCR', P .. 'pid')
    local partId = count .. PART_SUFFIX
    sweep(count, claims)
    if unit == '' then unit = 'p' .. partId else unit = 'u' .. unit end
    local buf, bm, bu = P .. 'buf:' .. dk, P .. 'bm:' .. dk, P .. 'bu:' .. dk
    redis.call('RPUSH', buf, int(now) .. (closeNow and ' 1 ' or ' 0 ') .. unit .. '\n{"id":"' .. partId .. '",' .. string.sub(partJson, 2))
    local m = redis.call('HMGET', bm, 'firstAt', 'fence', 'reason', 'deadline', 'window', 'maxWait', 'maxMessages', 'retrying', 'units', 'u1')
    local firstAt = tonumber(m[1])
    local units
    if firstAt == nil then
      firstAt, units = now, 1
    else
      -- the rule of the part that opened the buffer
      window, maxWait, maxMessages = tonumber(m[5]), tonumber(m[6]), tonumber(m[7])
      -- distinct units: counted in the meta, listed in `bu:` once there are two (see rearm.lua)
      units = tonumber(m[9])
      if m[10] == false then -- a buffer an earlier version opened keeps its set
        redis.call('SADD', bu, unit)
        units = redis.call('SCARD', bu)
      elseif units == 1 then
        if unit ~= m[10] then redis.call('SADD', bu, m[10], unit); units = 2 end
      elseif redis.call('SADD', bu, unit) == 1 then
        units = units + 1
      end
    end
    local deadline, reason
    -- a buffer already closed stays closed: this part waits behind the cut for the next batch
    if m[3] == 'command' or m[3] == 'count' then deadline, reason = tonumber(m[4]), m[3]
    elseif closeNow then deadline, reason = now, 'command'
    elseif units >= maxMessages then deadline, reason = now, 'count'
    else deadline, reason = closeAt(firstAt, now, window, maxWait) end
    if m[1] == false then
      redis.call('HSET', bm, 'firstAt', int(now), 'sessionKey', session, 'window', window, 'maxWait', maxWait, 'maxMessages', maxMessages,
        'lastAt', int(now), 'deadline', int(deadline), 'reason', reason, 'units', units, 'u1', unit)
    else
      redis.call('HSET', bm, 'lastAt', int(now), 'deadline', int(deadline), 'reason', reason, 'units', units)
    end
    -- a leased buffer stays scored at its lease, a retrying one at its retry time; the flush
    -- re-arms it from what remains
    if not m[2] and not m[8] then redis.call('ZADD', P .. 'due', deadline, dk) end
    verdict = { 'accepted', partId, deadline, newGroup or {} }
  end
  out[n] = verdict
end
return out
