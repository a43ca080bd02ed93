-- Lua shared by the scripts that keep a debounce buffer: its parts, its meta and its place in
-- `due`. Every script receives the key prefix (`{ai}:`) as KEYS[1], so Redis Cluster routes
-- it to the one slot all keys share; the other keys are built from it inside the script.
-- (KEYS[2], never written, makes Redis refuse a script while that slot migrates: connections.ts.)
--
-- A buffered part is stored as one list element: `<arrivedAt> <closeNow 0|1> <unit>\n<part JSON>`,
-- where `unit` is `u<JSON string>` (a caller's unit, JSON-quoted so it holds no newline) or
-- `p<partId>`. The header lets a script re-arm a buffer from the parts left after a flush
-- without decoding any JSON.
--
-- Keys, all under `{<keyPrefix>}:` (one Cluster slot):
--   c:<claim> STRING PX, cs:<space> ZSET claim -> expiry (cap + stats), corr:<key> LIST PX and
--   corrs ZSET (cap + stats), pid / fence / seq / ptoken INCR, buf:<debounceKey> LIST of parts,
--   bm:<debounceKey> HASH meta, bu:<debounceKey> SET of units, due ZSET (deadline, or lease end),
--   lock:<session> `<fence> <heldUntil> <debounceKey>` PX (a day), wait:<session> SET of buffers waiting for the lock,
--   out STREAM `<seq>-0`, ids HASH id -> seq, st HASH seq -> delivery state, undelivered / dead
--   ZSET by seq, q:<session> LIST of seqs, ready ZSET session -> head due (or lease end),
--   pl:<session> push lease `<token> <leaseUntil>` PX (a claim's: a day past its end, claim-lease.lua),
--   stats HASH eviction counters,
--   claim:<token> LIST of the buffers a claim leased PX (a lease), unclaimed:<token> PX (an hour),
--   lease:<name> HASH holder / until / fence (named leases), conns HASH instance -> its connections,
--   val:<name> STRING PX (shared values: access tokens), epoch STRING (random, written when absent:
--   the store's identity), outlife STRING `<tag> <since>` (the life of the outbox's seqs: identity.ts),
--   holds HASH holder -> `<afterSeq> <until>` (records a cut stream had not read).
--   turn:<session> HASH id / at / until PX
--   (agent turns) and turns ZSET session -> until; a session's held messages are the buffer
--   `~turn:<session>` (include/held.lua).
--   ctx:<session> ZSET seq -> kept message and cm:<session> HASH dropped / until, both PX (a
--   session's context, include/context.lua), cseq INCR (context seqs), activation HASH session ->
--   override JSON (no expiry).
--   rev:<session> LIST PX (a session's recalls and edits, rules/revise.lua: revise.lua) and
--   tko:<session> STRING `<since> <until>` (its takeover, kept until end-takeover.lua ends it).
--   bud:<budget> ZSET `<at>-<n>` -> at PX (a budget's spends in its window) and budseq INCR
--   (spend-budgets.lua); a session's deferred batches are the buffer `~budget:<session>\0<budget>`
--   whose meta says when it is due (`deferred`, defer.lua).
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
