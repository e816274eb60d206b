--[[
  add_job: add a standard job as BullMQ's Queue.add stores it (no delay, priority, parent or
  deduplication: ringback only enqueues callbacks, for /api/notify/send and the orphan sweep).
  A custom job id that already exists is not added again (event `duplicated`).

  KEYS[1] wait      KEYS[5] active
  KEYS[2] meta      KEYS[6] marker
  KEYS[3] id        KEYS[7] paused
  KEYS[4] events    KEYS[8] (optional) a once-marker: set with the job, it outlives the job; while
                    it exists the job is not added again, even after the job was removed

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id ("" = the next number from `id`)
  ARGV[3] job name
  ARGV[4] data (JSON)
  ARGV[5] opts (JSON, as Node stores them; must hold `attempts`)
  ARGV[6] timestamp (ms)
  ARGV[7] the once-marker's life (ms), with KEYS[8]

  Returns {jobId, "created" | "duplicate"}
]]
local q = {prefix = ARGV[1], wait = KEYS[1], meta = KEYS[2], events = KEYS[4], active = KEYS[5],
  marker = KEYS[6], paused = KEYS[7]}
local once = KEYS[8]
if once and rcall("EXISTS", once) == 1 then
  return {rcall("GET", once), "duplicate"}
end
local counter = rcall("INCR", KEYS[3])
local jobId = ARGV[2]
if jobId == "" then jobId = tostring(counter) end
local jobKey = q.prefix .. jobId
local limit = maxEvents(q.meta)
if once then rcall("SET", once, jobId, "PX", ARGV[7]) end
if rcall("EXISTS", jobKey) == 1 then
  rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "duplicated", "jobId", jobId)
  return {jobId, "duplicate"}
end
rcall("HSET", jobKey, "name", ARGV[3], "data", ARGV[4], "opts", ARGV[5], "timestamp", ARGV[6],
  "delay", 0, "priority", 0)
rcall("XADD", q.events, "*", "event", "added", "jobId", jobId, "name", ARGV[3])
local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
rcall("LPUSH", target, jobId)
addBaseMarker(q.marker, pausedOrMaxed)
rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "waiting", "jobId", jobId)
return {jobId, "created"}
