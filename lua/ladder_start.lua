--[[
  ladder_start: open a run's escalation ladder once its text is claimed. The record says where
  the ladder stands (`state` climbing, stopped or exhausted; `step`, the last step started, 0
  for the text; `due`, when the next step may start); the due index tells the ladder sweep
  which ladder to look at next. Opening again changes nothing (a retried job, a second worker).

  KEYS[1] ladder record
  KEYS[2] ladder due index (global: absent = the caller writes it in a separate call)

  ARGV[1] runId
  ARGV[2] steps after the text
  ARGV[3] the first step's wait (ms, from now)
  ARGV[4] record TTL (ms)
  ARGV[5] the plan: the steps and what they say (JSON, read by the ladder sweep)
  ARGV[6] "1" when the run is a question (a delivered receipt then acknowledges nothing)
  ARGV[7] the recipient (the number the text went to)

  Returns the first step's due time (ms, Redis's clock) when opened, 0 when already open (left
  as it is)
]]
local now = redisNowMs()
if rcall("EXISTS", KEYS[1]) == 1 then return 0 end
local due = now + tonumber(ARGV[3])
rcall("HSET", KEYS[1], "state", "climbing", "step", 0, "steps", ARGV[2], "due", due,
  "opened", now, "plan", ARGV[5], "question", ARGV[6], "recipient", ARGV[7])
rcall("PEXPIRE", KEYS[1], ARGV[4])
if KEYS[2] then rcall("ZADD", KEYS[2], due, ARGV[1]) end
return due
