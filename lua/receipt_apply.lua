--[[
  receipt_apply: apply one delivery status (a Twilio status callback, or a poll of the message)
  to the callback record of its run, atomically.

  Statuses are ranked: accepted/scheduled/queued 0 < sending 1 < sent 2 <
  delivered/undelivered/failed/canceled/partially_delivered 3 < read 4. A record never moves to a
  lower rank; arrival order never decides (messaging callbacks carry no event time). At equal
  rank a later RawDlrDoneDate (YYMMDDhhmm) wins; otherwise the first terminal status wins and a
  different one is kept in the history as a conflict. A status for another message of the same
  run (a second text) goes to the history only.

  KEYS[1] callback record   (ringback:callback:{<claim key>})
  KEYS[2] history list      (ringback:callback-history:{<claim key>})
  KEYS[3] repeat marker     (ringback:receipt-seen:<idempotency token or params hash>; "" = none)
  KEYS[4] message link      (ringback:message:<MessageSid> -> runId)
  KEYS[5] reconcile set     (ZSET MessageSid -> when to poll it next)

  ARGV[1] runId           ARGV[6] now (ms)
  ARGV[2] MessageSid      ARGV[7] source: "webhook" | "poll" | "send"
  ARGV[3] status          ARGV[8] repeat TTL (ms)
  ARGV[4] error code ("") ARGV[9] link / record TTL (ms)
  ARGV[5] RawDlrDoneDate ("")
  ARGV[10] next poll at (ms) for a non-terminal status ("" = leave)

  Returns {outcome, status now, previous status}; outcome is one of
    "repeat" (seen before: nothing changed), "applied", "stale" (lower rank: history only),
    "same" (no change), "conflict" (a different terminal status: history only),
    "other" (another message of the run: history only), "unknown" (not a status we rank)
]]
local rec, hist = KEYS[1], KEYS[2]
local runId, sid, status, code, dlr, now, source = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if KEYS[3] ~= "" and not rcall("SET", KEYS[3], "1", "NX", "PX", ARGV[8]) then
  return {"repeat", rcall("HGET", rec, "status") or "", ""}
end

local ranks = {accepted = 0, scheduled = 0, queued = 0, sending = 1, sent = 2, delivered = 3,
  undelivered = 3, failed = 3, canceled = 3, partially_delivered = 3, read = 4}
local rank = ranks[status]
local cur = rcall("HMGET", rec, "sid", "status", "rank", "dlr")
local prev = cur[2] or ""

local function remember(outcome)
  local entry = {status = status, sid = sid, at = tonumber(now), source = source, outcome = outcome}
  if code ~= "" then entry["error_code"] = code end
  if dlr ~= "" then entry["raw_dlr_done_date"] = dlr end
  rcall("RPUSH", hist, cjson.encode(entry))
  rcall("LTRIM", hist, -200, -1)
  rcall("PEXPIRE", hist, ARGV[9])
end

rcall("SET", KEYS[4], runId, "PX", ARGV[9])
if rank == nil then
  remember("unknown")
  return {"unknown", prev, prev}
end
if cur[1] and cur[1] ~= sid then
  remember("other")
  return {"other", prev, prev}
end

local curRank = tonumber(cur[3])
local outcome = "applied"
if curRank ~= nil then
  if rank < curRank then
    outcome = "stale"
  elseif rank == curRank then
    if status == prev then
      outcome = "same"
    elseif dlr ~= "" and cur[4] and cur[4] ~= "" and dlr > cur[4] then
      outcome = "applied"
    elseif dlr ~= "" and cur[4] and cur[4] ~= "" and dlr < cur[4] then
      outcome = "stale"
    elseif rank == 3 then
      outcome = "conflict"
      rcall("HSET", rec, "conflict", "1")
    else
      outcome = "same"
    end
  end
end
remember(outcome)
if outcome ~= "applied" then
  if outcome == "same" and code ~= "" and not rcall("HGET", rec, "error_code") then
    rcall("HSET", rec, "error_code", code)
  end
  return {outcome, prev, prev}
end

rcall("HSET", rec, "run_id", runId, "sid", sid, "status", status, "rank", rank, "updated_at", now, "source", source)
if code ~= "" then rcall("HSET", rec, "error_code", code) end
if dlr ~= "" then rcall("HSET", rec, "dlr", dlr) end
if not rcall("HGET", rec, "accepted_at") then rcall("HSET", rec, "accepted_at", now) end
rcall("PEXPIRE", rec, ARGV[9])
if rank >= 3 then
  rcall("ZREM", KEYS[5], sid)
elseif ARGV[10] ~= "" then
  rcall("ZADD", KEYS[5], ARGV[10], sid)
end
return {"applied", status, prev}
