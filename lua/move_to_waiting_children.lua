--[[
  move_to_waiting_children: the processor waits for its job's children (Node's
  `job.moveToWaitingChildren(token)` + `WaitingChildrenError`): when some are pending, the job
  leaves active for `waiting-children` (its lock released); it comes back to wait when the last
  child finishes (move_to_finished).

  KEYS[1] active        KEYS[5] the job's unsuccessful key
  KEYS[2] waiting-children  KEYS[6] stalled
  KEYS[3] job key       KEYS[7] events
  KEYS[4] the job's dependencies key

  ARGV[1] lock token
  ARGV[2] timestamp (ms)
  ARGV[3] job id

  Returns 0 moved, 1 no pending children (the job stays active), -1 job missing,
  -2 lock missing, -3 not active, -6 lock owned by another token, -9 a child failed
]]
if rcall("EXISTS", KEYS[3]) ~= 1 then return -1 end
if rcall("ZCARD", KEYS[5]) ~= 0 then return -9 end
if rcall("SCARD", KEYS[4]) == 0 then return 1 end
local code = releaseLock(KEYS[3], KEYS[6], ARGV[1], ARGV[3])
if code < 0 then return code end
if rcall("LREM", KEYS[1], -1, ARGV[3]) < 1 then return -3 end
rcall("ZADD", KEYS[2], tonumber(ARGV[2]), ARGV[3])
rcall("XADD", KEYS[7], "*", "event", "waiting-children", "jobId", ARGV[3], "prev", "active")
return 0
