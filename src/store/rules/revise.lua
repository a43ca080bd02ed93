-- The rules of second thoughts: the store rules of revise.ts beside this file, on the Redis
-- store's encoding; the store test kit's revision and takeover cases run against every store.
-- Times are written with `num` (17 significant digits): a caller's time comes back as it was
-- given, fractions included, where `int` would cut them.
local function num(n) return string.format('%.17g', n) end

-- A kept revision is `<until> <kind> <messageId as a JSON string>\n<revision JSON>`: `until` is its
-- time plus the ttlMs it was kept for, and the quoted id holds no newline.
-- A session's revisions still live at `now`: those whose `until` is later.
local function keptRevisions(list, now)
  local live = {}
  for _, kept in ipairs(list) do
    if tonumber(string.match(kept, '^(%S+)')) > now then live[#live + 1] = kept end
  end
  return live
end

-- The kept context entries of message `messageId` after a revision (`kind`, an edit's
-- `contentJson`), as ZREM / ZADD pairs: a recall removes them, an edit sets their content, which
-- the entry's header carries (`<seq> <at> <content as a JSON string>`, include/context.lua)
-- beside the message as it was kept. Entries are `{member, seq}`; `quotedId` finds a candidate
-- without decoding every message. Returns the entries to remove and those to add (empty when no
-- entry is of that message).
local function revisedContext(entries, kind, messageId, quotedId, contentJson)
  local removed, added = {}, {}
  for _, entry in ipairs(entries) do
    local seq, at, json = string.match(entry[1], '^(%d+) (%d+)[^\n]*\n(.*)$')
    if json and string.find(json, quotedId, 1, true) and cjson.decode(json).messageId == messageId then
      removed[#removed + 1] = entry[1]
      if kind == 'edit' then added[#added + 1] = { entry[2], seq .. ' ' .. at .. ' ' .. contentJson .. '\n' .. json } end
    end
  end
  return removed, added
end

-- A human spoke at `at`: a live takeover (until after `now`) is extended, within `maxMs` of its
-- start and never shortened; otherwise one starts, ending one that ran out without its end.
-- `current` is `{since, until}` or nil. Returns started, the takeover, and the one it ended.
local function heldTakeover(current, at, holdMs, maxMs, now)
  if current and current[2] > now then
    return false, { current[1], math.max(current[2], math.min(at + holdMs, current[1] + maxMs)) }
  end
  return true, { at, at + math.min(holdMs, maxMs) }, current
end
