-- When a buffer closes, from its distinct units and arrival times (no command among them).
local function closeAt(units, firstAt, lastAt, window, maxWait, maxMessages)
  if units >= maxMessages then return lastAt, 'count' end
  local w, m = lastAt + window, firstAt + maxWait
  if w <= m then return w, 'window' end
  return m, 'max_wait'
end
