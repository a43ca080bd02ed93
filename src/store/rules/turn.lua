-- Agent turns: the store rules of turn.ts beside this file, line for line; the store test kit's
-- turn cases run against every store, so the two cannot drift apart.

-- What a commit does with a message batch of a session: hold (0|1), link field, link id, opens (0|1).
local function turnStep(mode, fromHeld, heldWaiting, open, last)
  if fromHeld then
    if not last then return 0, nil, nil, 1 end
    return 0, 'followsUp', last, 1
  end
  -- held messages go first: a batch behind them waits with them, whatever the mode says now
  if heldWaiting then return 1, nil, nil, 0 end
  if not open then
    if mode ~= 'off' then return 0, nil, nil, 1 end
    return 0, nil, nil, 0
  end
  if mode == 'collect' or mode == 'followup' then return 1, nil, nil, 0 end
  if mode == 'steer' then return 0, 'during', open, 0 end
  if mode == 'interrupt' then return 0, 'interrupts', open, 1 end
  return 0, nil, nil, 0
end

-- When a held buffer is due: when its turn closes, or once it holds maxHeld messages.
-- parts are buffer elements '<receivedAt> <closes> <unit>\n<json>'.
local function heldDeadline(parts, maxHeld, untilAt)
  if #parts >= maxHeld then
    local at = tonumber(string.match(parts[maxHeld], '^(%d+)'))
    if at < untilAt then return at, 'max_held' end
    return untilAt, 'max_held'
  end
  return untilAt, 'turn'
end

-- An output body with the turn link as its last field (output ids need no JSON escaping).
local function withLink(body, field, id)
  if not field then return body end
  local cut = #body
  while string.sub(body, cut, cut) ~= '}' do cut = cut - 1 end
  return string.sub(body, 1, cut - 1) .. ',"' .. field .. '":"' .. id .. '"}'
end
