-- How a debounce buffer closes: the store rules of close.ts beside this file, line for line;
-- the store test kit's table of cases runs against every store, so the two cannot drift apart.
-- A part is stored as '<receivedAt> <1 if a command> <unit>\n<json>'.

-- How many leading parts make the next batch, and what closed it ('command', 'count' or nil):
-- up to and including the first command, or the part whose unit reached maxMessages (an
-- album's later parts go with its first); all of them when neither happened.
local function batchOf(parts, maxMessages)
  local units, count = {}, 0
  for i, p in ipairs(parts) do
    local c, unit = string.match(p, '^%d+ (%d) ([^\n]*)')
    if c == '1' then return i, 'command' end
    if not units[unit] then units[unit] = true; count = count + 1 end
    if count >= maxMessages then
      local j = i
      while j < #parts do
        local c2, u2 = string.match(parts[j + 1], '^%d+ (%d) ([^\n]*)')
        if c2 == '1' or not units[u2] then break end
        j = j + 1
      end
      return j, 'count'
    end
  end
  return #parts, nil
end

-- The deadline of a buffer no command and no count has closed: quiet for `window` after its
-- last part, but never later than `maxWait` after its first.
local function closeAt(firstAt, lastAt, window, maxWait)
  local w, m = lastAt + window, firstAt + maxWait
  if w <= m then return w, 'window' end
  return m, 'max_wait'
end
