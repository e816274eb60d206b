--[[
  add_child: add a standard job that is a child of `parent` (Queue.add with `opts.parent`, as a
  processor does before moving its job to waiting-children): the child's hash names its parent
  (`parentKey`, `parent`), and the parent's `dependencies` set gets the child's key.

  KEYS[1] wait      KEYS[5] active     KEYS[8] the parent's job key
  KEYS[2] meta      KEYS[6] marker     KEYS[9] the parent's dependencies key
  KEYS[3] id        KEYS[7] paused
  KEYS[4] events

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] job id ("" = the next number from `id`)
  ARGV[3] job name
  ARGV[4] data (JSON)
  ARGV[5] opts (JSON, as Node stores them; must hold `attempts`)
  ARGV[6] timestamp (ms)
  ARGV[7] the parent's id
  ARGV[8] the parent's queue key "<prefix>:<queue>"

  Returns {jobId, "created" | "duplicate"}, or -5 when the parent does not exist
]]
local q = {prefix = ARGV[1], wait = KEYS[1], meta = KEYS[2], events = KEYS[4], active = KEYS[5],
  marker = KEYS[6], paused = KEYS[7]}
if rcall("EXISTS", KEYS[8]) ~= 1 then return -5 end
local parentData = cjson.encode({id = ARGV[7], queueKey = ARGV[8]})
local counter = rcall("INCR", KEYS[3])
local jobId = ARGV[2]
if jobId == "" then jobId = tostring(counter) end
local jobKey = q.prefix .. jobId
local limit = maxEvents(q.meta)
if rcall("EXISTS", jobKey) == 1 then
  rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "duplicated", "jobId", jobId)
  return {jobId, "duplicate"}
end
rcall("HSET", jobKey, "name", ARGV[3], "data", ARGV[4], "opts", ARGV[5], "timestamp", ARGV[6],
  "delay", 0, "priority", 0, "parentKey", KEYS[8], "parent", parentData)
rcall("XADD", q.events, "*", "event", "added", "jobId", jobId, "name", ARGV[3])
local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
rcall("LPUSH", target, jobId)
addBaseMarker(q.marker, pausedOrMaxed)
rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "waiting", "jobId", jobId)
rcall("SADD", KEYS[9], jobKey)
return {jobId, "created"}
