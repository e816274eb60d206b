--[[
  move_to_delayed: put an active job in the delayed set until a due time.
  Used for backoff retries (uses an attempt) and for a processor that asks
  to run again later (skipAttempt = "1": atm is left alone).
  Sets `delay` to the delay in ms; the `delayed` event carries the absolute
  due time; the marker's "1" member is set to the next due time.

  KEYS[1] marker      KEYS[7]  meta
  KEYS[2] active      KEYS[8]  stalled
  KEYS[3] prioritized  KEYS[9]  wait
  KEYS[4] delayed     KEYS[10] limiter
  KEYS[5] job key     KEYS[11] pc
  KEYS[6] events      KEYS[12] paused

  ARGV[1] key prefix      ARGV[7]  fetch next "1" | "0"
  ARGV[2] now (ms)        ARGV[8]  lock duration (ms)      (for fetch next)
  ARGV[3] jobId           ARGV[9]  worker name ("" none)   (for fetch next)
  ARGV[4] lock token      ARGV[10] limiter max ("" none)   (for fetch next)
  ARGV[5] delay (ms)      ARGV[11] limiter duration ("")   (for fetch next)
  ARGV[6] skip attempt "1" | "0"
  ARGV[12..] field/value pairs to write on the job (failedReason, stacktrace)

  Returns 0 ok, -1 job missing, -2 lock missing, -3 job not active,
          -6 lock owned by another token, or the next job's 4-tuple
          (see move_to_active) when fetch next took one.
]]
local q = {prefix = ARGV[1], marker = KEYS[1], active = KEYS[2], prioritized = KEYS[3],
  delayed = KEYS[4], events = KEYS[6], meta = KEYS[7], stalled = KEYS[8], wait = KEYS[9],
  limiter = KEYS[10], pc = KEYS[11], paused = KEYS[12]}
local jobKey, jobId, now = KEYS[5], ARGV[3], ARGV[2]
if rcall("EXISTS", jobKey) == 0 then return -1 end
local code = releaseLock(jobKey, q.stalled, ARGV[4], jobId)
if code < 0 then return code end
applyFields(jobKey, 12)
if rcall("LREM", q.active, -1, jobId) < 1 then return -3 end

local delay = tonumber(ARGV[5])
local score, due = delayedScore(q.delayed, now, delay)

if ARGV[6] ~= "1" then rcall("HINCRBY", jobKey, "atm", 1) end
rcall("HSET", jobKey, "delay", ARGV[5])
rcall("ZADD", q.delayed, score, jobId)
rcall("XADD", q.events, "MAXLEN", "~", maxEvents(q.meta), "*", "event", "delayed",
  "jobId", jobId, "delay", due)

if ARGV[7] == "1" then
  local w = {token = ARGV[4], lockDuration = ARGV[8], name = ARGV[9],
    limiterMax = ARGV[10], limiterDuration = ARGV[11]}
  local next = fetchNext(q, now, w)
  if next and type(next[1]) == "table" then return next end
end
addDelayMarker(q.marker, q.delayed)
return 0
