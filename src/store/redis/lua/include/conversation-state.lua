-- @include revise
-- A session's conversation as conversation.lua answers it: {{its activation override (false when
-- none), its dropped count, then its kept entries oldest first (include/context.lua)}, its live
-- revisions' JSON oldest first (rules/revise.lua), its takeover (`<since> <until>`, false when
-- none)}. The kept entries and the dropped count only with `withContext`, and only while the
-- context's time is not up by `now`. `activation`: the override when read already.
local function conversationOf(session, now, withContext, activation)
  if activation == nil then activation = redis.call('HGET', P .. 'activation', session) end
  local conversation = { activation, 0 }
  if withContext then
    local m = redis.call('HMGET', P .. 'cm:' .. session, 'dropped', 'until')
    if m[2] and tonumber(m[2]) > now then
      conversation[2] = tonumber(m[1])
      for _, entry in ipairs(redis.call('ZRANGE', P .. 'ctx:' .. session, 0, -1)) do
        conversation[#conversation + 1] = entry
      end
    end
  end
  local revisions = {}
  for i, kept in ipairs(keptRevisions(redis.call('LRANGE', P .. 'rev:' .. session, 0, -1), now)) do
    revisions[i] = string.match(kept, '\n(.*)$')
  end
  return { conversation, revisions, redis.call('GET', P .. 'tko:' .. session) }
end
-- The conversation a flush decides by, read with its lease (claim-due.lua): conversationOf
-- without the kept entries, then 1 when the session keeps context by `now` (the flush reads it
-- then, if the batch goes out) or 0. Most sessions have no override, context, revision or
-- takeover, and most stores no override at all: one EXISTS over the four keys says so.
local function leasedConversation(session, now)
  local cm = P .. 'cm:' .. session
  local found = redis.call('EXISTS', P .. 'activation', cm, P .. 'rev:' .. session, P .. 'tko:' .. session)
  if found == 0 then return { { false, 0 }, {}, false, 0 } end
  local activation = redis.call('HGET', P .. 'activation', session)
  -- the override alone: the hash was the one key found
  if activation and found == 1 then return { { activation, 0 }, {}, false, 0 } end
  local state = conversationOf(session, now, false, activation)
  local contextUntil = redis.call('HGET', cm, 'until')
  state[4] = (contextUntil and tonumber(contextUntil) > now) and 1 or 0
  return state
end
