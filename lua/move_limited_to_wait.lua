--[[
  move_limited_to_wait: a processor rate-limited the queue (Node's `worker.rateLimit(ms)` +
  `RateLimitError`): put its job back to wait without using an attempt, at the head of the line
  (or at the front of its priority), and answer how long the limit still holds, as Node's
  moveJobFromActiveToWait does.

  KEYS[1] job key       KEYS[5] meta        KEYS[9]  events
  KEYS[2] active        KEYS[6] limiter     KEYS[10] paused
  KEYS[3] wait          KEYS[7] prioritized
  KEYS[4] stalled       KEYS[8] marker

  ARGV[1] job id
  ARGV[2] lock token

  Returns the limiter's remaining ms (0 when gone), -1 job missing, -2 lock missing,
  -6 lock owned by another token
]]
local jobId = ARGV[1]
if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
local code = releaseLock(KEYS[1], KEYS[4], ARGV[2], jobId)
if code < 0 then return code end
if rcall("LREM", KEYS[2], 1, jobId) > 0 then
  local target, pausedOrMaxed = readyTarget(KEYS[5], KEYS[2], KEYS[3], KEYS[10])
  local priority = tonumber(rcall("HGET", KEYS[1], "priority")) or 0
  if priority > 0 then
    -- front of its priority: the counter part of the score taken as 0
    rcall("ZADD", KEYS[7], priority * 0x100000000, jobId)
  else
    rcall("RPUSH", target, jobId)
    addBaseMarker(KEYS[8], pausedOrMaxed)
  end
  rcall("XADD", KEYS[9], "MAXLEN", "~", maxEvents(KEYS[5]), "*", "event", "waiting",
    "jobId", jobId, "prev", "active")
end
local pttl = rcall("PTTL", KEYS[6])
if pttl > 0 then return pttl end
return 0
