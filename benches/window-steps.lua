--[[
  The window's Redis cost by step and by command, inside Redis (scripts/bench-window-steps runs
  it under callgrind; read that script's header first). Appended to common.lua, finish.lua,
  window.lua and fused.lua exactly as the fused SMS finish includes them, so `callbackOf`,
  `claimRun` and `markSentRun` are the functions ringback runs.

  ARGV[1] runs (N)     ARGV[2] what to run     ARGV[3] the runIds' prefix
  Runs N callbacks' worth of one thing, each on its own run (<prefix><i>); returns N.

  What (ARGV[2]):
    widen      the open-attempts index into the skiplist encoding, as ringback's claim keeps it
               (keepIndexWide in window.lua); the lines before it see the compact one
    gc         a full collection of Lua's garbage (the driver's, between lines)
    prefill    the shared sets as a 20,000-job run leaves them (recent-runs index and reconcile
               set at 20,000 members; the open-attempts index at the 50 attempts in flight at
               concurrency 50); call it once with N = 20,000
    keys       the loop and the run's key names alone (what every line below also pays)
    parse      callbackOf: the fetched job's fields read as the fused claim reads them
    steps      claimRun then markSentRun: one text's window as ringback's Lua runs it
    bare       the same commands with literal arguments and no logic
    c:<n>      command n of `bare` alone (1..14, but 10), over runs that went through the ones
               before it; c:5 is the open-attempts index's pair, its ZADD (5) and its ZREM (10),
               so that the index stays at the 50 in flight as it does in production
]]
local N, what, prefix = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local TOKEN = "0a0b0c0d-1111-4222-8333-444455556666"
local DATA = '{"runId":"q-123","to":"+15558675310","body":"Run 123 finished: 2 approvals needed"}'
local FIELDS = {"name", "agent-callback", "data", DATA, "opts",
  '{"attempts":1,"backoff":{"type":"fixed","delay":1000}}', "timestamp", "1764625000000",
  "delay", "0", "priority", "0", "processedOn", "1764625000123", "ats", "1", "atm", "1"}
local OPEN, RECENT, RECONCILE = "ringback:window:open", "ringback:runs:recent", "ringback:reconcile"
local NOW = 1764625000123
local SENT_TTL, LEASE = "86400000", "600000"

-- The bare commands of one text's window, in the order ringback sends them (claim, then the
-- sent marker with the send's receipt); `k` = the run's keys.
local BARE = {
  function(k) redis.call("EXISTS", k.claim, k.attempt, k.rec) end,
  function(k) redis.call("SET", k.claim, "pending:" .. TOKEN, "PX", LEASE) end,
  function(k)
    redis.call("HSET", k.attempt, "token", TOKEN, "job", "123", "worker", "worker-1", "state",
      "claimed", "claimed_at", "1764625000123", "since", "1764625000123", "to", "+15558675310",
      "from", "", "body", "Run 123 finished: 2 approvals needed")
  end,
  function(k) redis.call("PEXPIRE", k.attempt, SENT_TTL) end,
  function(k) redis.call("ZADD", OPEN, "1764625015123", k.runId) end,
  function(k) redis.call("ZADD", RECENT, k.score, k.runId) end,
  function(k) redis.call("SET", k.claim, "sent:" .. k.sid, "PX", SENT_TTL, "GET") end,
  function(k) redis.call("HGET", k.attempt, "token") end,
  function(k) redis.call("HSET", k.attempt, "state", "sent", "sid", k.sid, "sent_at", "1764625000200") end,
  function(k) redis.call("ZREM", OPEN, k.runId) end,
  function(k) redis.call("EXISTS", k.rec) end,
  function(k) redis.call("SET", k.link, k.runId, "PX", SENT_TTL) end,
  function(k)
    redis.call("HSET", k.rec, "run_id", k.runId, "sid", k.sid, "status", "queued", "rank", "0",
      "updated_at", "1764625000200", "source", "send", "accepted_at", "1764625000200", "send",
      "1764625000200 queued " .. TOKEN)
    redis.call("PEXPIRE", k.rec, SENT_TTL)
  end,
  function(k) redis.call("ZADD", RECONCILE, k.score, k.sid) end,
}

local function keysOf(i)
  local runId = prefix .. i
  local claim = "agent-callback:" .. runId
  return {runId = runId, claim = claim, attempt = "ringback:attempt:{" .. claim .. "}",
    rec = "ringback:callback:{" .. claim .. "}", hist = "ringback:history:{" .. claim .. "}",
    sid = "SM" .. runId, link = "ringback:link:SM" .. runId, score = int(NOW + i)}
end

if what == "gc" then
  -- between lines, outside the count: each line then pays the collection of its own garbage
  -- (as production does), not of the line's before it
  collectgarbage("collect")
  return N
end

if what == "widen" then
  keepIndexWide(OPEN)
  return N
end

if what == "prefill" then
  for i = 1, N do
    redis.call("ZADD", RECENT, int(NOW - 2 * N + i), "old-" .. i)
    redis.call("ZADD", RECONCILE, int(NOW - 2 * N + i), "SMold-" .. i)
    if i <= 50 then redis.call("ZADD", OPEN, int(NOW + i), "open-" .. i) end
  end
  return N
end

local command = string.match(what, "^c:(%d+)$")
command = command and tonumber(command)
for i = 1, N do
  local k = keysOf(i)
  if what == "parse" then
    callbackOf(FIELDS)
  elseif what == "steps" then
    claimRun({k.claim, k.attempt, k.rec, OPEN, RECENT},
      {TOKEN, "123", "worker-1", "", "15000", "60000", SENT_TTL, "+15558675310", "",
       "Run 123 finished: 2 approvals needed", k.runId, LEASE, "20000"}, NOW)
    markSentRun({k.claim, k.attempt, OPEN, k.link, k.rec, k.hist, RECONCILE},
      {TOKEN, k.sid, SENT_TTL, k.runId, "queued", "60000", "sent"}, NOW + 77)
  elseif what == "bare" then
    for c = 1, #BARE do BARE[c](k) end
  elseif command == 5 then
    BARE[5](k)
    BARE[10](k)
  elseif command and BARE[command] and command ~= 10 then
    BARE[command](k)
  elseif what ~= "keys" then
    return redis.error_reply("window-steps: unknown " .. what)
  end
end
return N
