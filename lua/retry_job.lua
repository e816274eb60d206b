--[[
  retry_job: a failed attempt with attempts left and no backoff delay goes
  straight back to wait (front for lifo via RPUSH, else LPUSH) or to the
  prioritized set with a fresh counter. Uses an attempt (atm + 1).

  KEYS[1] active      KEYS[7]  delayed
  KEYS[2] wait        KEYS[8]  prioritized
  KEYS[3] paused      KEYS[9]  pc
  KEYS[4] job key     KEYS[10] marker
  KEYS[5] meta        KEYS[11] stalled
  KEYS[6] events

  ARGV[1] key prefix    ARGV[4] jobId
  ARGV[2] now (ms)      ARGV[5] lock token
  ARGV[3] push command "LPUSH" | "RPUSH"
  ARGV[6..] field/value pairs to write on the job (failedReason, stacktrace)

  Returns 0 ok, -1 job missing, -2 lock missing, -3 job not active,
          -6 lock owned by another token
]]
local q = {prefix = ARGV[1], active = KEYS[1], wait = KEYS[2], paused = KEYS[3],
  meta = KEYS[5], events = KEYS[6], delayed = KEYS[7], prioritized = KEYS[8],
  pc = KEYS[9], marker = KEYS[10]}
local jobKey, jobId = KEYS[4], ARGV[4]
promoteDelayed(q, ARGV[2])
if rcall("EXISTS", jobKey) == 0 then return -1 end
local code = releaseLock(jobKey, KEYS[11], ARGV[5], jobId)
if code < 0 then return code end
applyFields(jobKey, 6)
if rcall("LREM", q.active, -1, jobId) < 1 then return -3 end
enqueueReady(q, jobId, ARGV[3])
rcall("HINCRBY", jobKey, "atm", 1)
rcall("XADD", q.events, "MAXLEN", "~", maxEvents(q.meta), "*", "event", "waiting",
  "jobId", jobId, "prev", "active")
return 0
