-- Lua shared by the scripts that keep a debounce buffer: its parts, its meta and its place in
-- `due`. Every script receives the key prefix (`{ai}:`) as KEYS[1], so Redis Cluster routes
-- it to the one slot all keys share; the other keys are built from it inside the script.
--
-- A buffered part is stored as one list element: `<arrivedAt> <closeNow 0|1> <unit>\n<part JSON>`,
-- where `unit` is `u<JSON string>` (a caller's unit, JSON-quoted so it holds no newline) or
-- `p<partId>`. The header lets a script re-arm a buffer from the parts left after a flush
-- without decoding any JSON.
local P = KEYS[1]
local function int(n) return string.format('%d', n) end
local function redisNow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- the caller's clock when given (leases and schedules), else the server's
local function nowOf(arg)
  if arg == nil or arg == '' then return redisNow() end
  return tonumber(arg)
end
