--[[
  move_to_finished: complete or fail an active job, exactly as a BullMQ worker
  leaves it, and optionally take the next job in the same call.

  Order matters and follows BullMQ: pending children are checked before the
  lock; the lock is released before the active-list check; parents (flows)
  are updated before `atm` is incremented; the job is kept or removed per
  keepJobs; events completed|failed (+ retries-exhausted), then drained.

  KEYS[1] wait        KEYS[8]  paused
  KEYS[2] active      KEYS[9]  meta
  KEYS[3] prioritized  KEYS[10] pc
  KEYS[4] events      KEYS[11] completed | failed (the target set)
  KEYS[5] stalled     KEYS[12] job key
  KEYS[6] limiter     KEYS[13] metrics:<target>
  KEYS[7] delayed     KEYS[14] marker

  ARGV[1]  jobId                   ARGV[10] keep age in seconds ("" = none)
  ARGV[2]  now (ms)                ARGV[11] keep limit per call ("" = 1000)
  ARGV[3]  "returnvalue" | "failedReason"
  ARGV[4]  the return value (JSON) or the failure reason
  ARGV[5]  "completed" | "failed"  ARGV[12] attempts (job option, 0 = one try)
  ARGV[6]  fetch next "1" | "0"    ARGV[13] max metrics data points ("" = off)
  ARGV[7]  key prefix              ARGV[14] lock duration (ms)     (fetch next)
  ARGV[8]  lock token              ARGV[15] worker name ("")       (fetch next)
  ARGV[9]  keep count (-1 = all, 0 = remove now, n = newest n)
  ARGV[16] limiter max ("")        ARGV[17] limiter duration ("")  (fetch next)
  ARGV[18..] field/value pairs to write first (failedReason, stacktrace)

  Returns 0 finished, -1 job missing, -2 lock missing, -3 job not active,
          -4 job has pending children, -6 lock owned by another token,
          -9 job has failed children, or the next job's 4-tuple when fetch
          next is asked and something was taken, rate limited or delayed.
]]
local q, f, w = finishedArgs(18)
local code = moveToFinished(q, f)
if code ~= 0 then return code end
return fetchNextOrDrain(q, f.now, w) or 0
