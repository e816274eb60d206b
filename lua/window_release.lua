--[[
  window_release: Twilio did not take the message. Compare-and-set on our own claim only.

  "released" (retry later, refused credentials): Twilio created nothing, but the run is not
  given back. The claim stays ours (lease refreshed) and the record becomes `retry`, in the
  open-attempts index at the retry time: whoever comes next (the job's retry on a ringback
  worker, or the orphan sweep if a legacy worker took the job and dropped it on our claim) sends
  it. Handing the claim back would let a legacy worker take the run and lose it by its own
  `if (!claimed) return;` (found by the model: docs/model-findings.md, F1).
  "send-failed" (a permanent refusal, already escalated): the claim is deleted and the run is
  closed.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index (global: absent = the caller writes it in a separate call)

  ARGV[1] attempt token
  ARGV[2] retry in (ms), for "released"
  ARGV[3] reason (kept on the record for escalation and `ringback status`)
  ARGV[4] "released" | "send-failed"
  ARGV[5] runId
  ARGV[6] claim lease (ms)

  Returns 1 done, 0 the claim was not ours (left alone)
]]
local now = redisNowMs()
local retryIn = math.max(tonumber(ARGV[2]) or 0, 1)
local ours = rcall("GET", KEYS[1]) == "pending:" .. ARGV[1]
-- The same call again (its reply was lost and it was re-sent): a send-failed release already
-- deleted the claim; the record says it was this attempt, so the answer is the first one's.
if not ours and ARGV[4] == "send-failed" then
  local rec = rcall("HMGET", KEYS[2], "token", "state")
  if rec[1] == ARGV[1] and rec[2] == "send-failed" then return 1 end
end
if ours then
  if ARGV[4] == "send-failed" then
    rcall("DEL", KEYS[1])
  else
    rcall("SET", KEYS[1], "pending:" .. ARGV[1], "PX", ARGV[6])
  end
end
if rcall("HGET", KEYS[2], "token") == ARGV[1] then
  if ARGV[4] == "send-failed" then
    rcall("HSET", KEYS[2], "state", "send-failed", "released_at", now, "error", ARGV[3])
    if KEYS[3] then rcall("ZREM", KEYS[3], ARGV[5]) end
  else
    rcall("HSET", KEYS[2], "state", "retry", "released_at", now, "error", ARGV[3])
    if KEYS[3] then rcall("ZADD", KEYS[3], now + retryIn, ARGV[5]) end
  end
end
if ours then return 1 end
return 0
