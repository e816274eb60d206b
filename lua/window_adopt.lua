--[[
  window_adopt: a callback job ended without its callback being resolved (failed by the stall
  limit before any attempt, or drained): make it an open attempt of the orphan sweep's, due now,
  unless the run is already sent, already open, or failed for good. Idempotent.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] callback record
  KEYS[4] open-attempts index (global: absent = the caller added the run, due now, before)

  ARGV[1] runId        ARGV[4] from ("" = the configured sender)
  ARGV[2] job id       ARGV[5] body
  ARGV[3] to           ARGV[6] record TTL (ms)
  ARGV[7] "1" = urgent, else ""   ARGV[8] time zone ("" = the deployment's)
  ARGV[9] question and ladder (job data fields as JSON, "" = none asked)

  Returns 1 adopted, 2 already open (indexed again), 0 nothing to do (sent or failed for good)
]]
local now = redisNowMs()
local v = rcall("GET", KEYS[1])
if v and (v == "sent" or string.sub(v, 1, 5) == "sent:") then return 0 end
if rcall("HGET", KEYS[3], "sid") then return 0 end
local state = rcall("HGET", KEYS[2], "state")
if state == "sent" or state == "send-failed" or state == "unknown" then return 0 end
if state == "claimed" or state == "ambiguous" or state == "retry" then
  if KEYS[4] then rcall("ZADD", KEYS[4], "NX", now, ARGV[1]) end
  return 2
end
rcall("DEL", KEYS[2])
rcall("HSET", KEYS[2], "token", "", "job", ARGV[2], "state", "retry", "since", now,
  "to", ARGV[3], "from", ARGV[4], "body", ARGV[5], "adopted_at", now)
if ARGV[7] == "1" then rcall("HSET", KEYS[2], "urgent", "1") end
if ARGV[8] and ARGV[8] ~= "" then rcall("HSET", KEYS[2], "tz", ARGV[8]) end
if ARGV[9] and ARGV[9] ~= "" then rcall("HSET", KEYS[2], "ask", ARGV[9]) end
rcall("PEXPIRE", KEYS[2], ARGV[6])
if KEYS[4] then rcall("ZADD", KEYS[4], now, ARGV[1]) end
return 1
