--[[
  update_progress: store a job's progress and announce it.

  KEYS[1] job key
  KEYS[2] events
  KEYS[3] meta

  ARGV[1] jobId
  ARGV[2] progress as JSON

  Returns 0 ok, -1 job missing
]]
if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
rcall("HSET", KEYS[1], "progress", ARGV[2])
rcall("XADD", KEYS[2], "MAXLEN", "~", maxEvents(KEYS[3]), "*", "event", "progress",
  "jobId", ARGV[1], "data", ARGV[2])
return 0
