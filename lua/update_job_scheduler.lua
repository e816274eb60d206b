--[[
  update_job_scheduler: when a worker activates a job of a job scheduler (`every` or cron
  `pattern`), create the scheduler's next iteration, as a Node worker does at activation.
  The next iteration's options are derived from the producing job's, as
  Node derives them: `repeat` gets count + 1 (and loses `immediately`), `repeatJobKey`,
  `timestamp`, `jobId`, `delay`. A cron pattern's next run is computed by the caller (Node does
  it client-side with cron-parser; ringback in crates/queue/src/cron) and passed as ARGV[7].

  KEYS[1] repeat       KEYS[5] meta         KEYS[9]  events
  KEYS[2] delayed      KEYS[6] prioritized  KEYS[10] pc
  KEYS[3] wait         KEYS[7] marker       KEYS[11] the producing job's key
  KEYS[4] paused       KEYS[8] id           KEYS[12] active

  ARGV[1] scheduler id
  ARGV[2] now (ms)
  ARGV[3] key prefix "<prefix>:<queue>:"
  ARGV[4] the producing job's id
  ARGV[5] the producing job's stored opts (JSON)
  ARGV[6] the producing job's data (JSON; v5 keeps it as the scheduler's template)
  ARGV[7] a cron scheduler's next run (ms), already clamped to now; "" when there is none

  Returns {"created", nextJobId} | {"duplicate", nextJobId} | {"done"} (limit or end date reached)
        | {"none"} (no such scheduler, or not its current iteration)
        | {"pattern"} (a cron scheduler called without a next run in ARGV[7])
]]
local q = {prefix = ARGV[3], repeatKey = KEYS[1], delayed = KEYS[2], wait = KEYS[3], paused = KEYS[4],
  meta = KEYS[5], prioritized = KEYS[6], marker = KEYS[7], events = KEYS[9], pc = KEYS[10],
  active = KEYS[12]}
local schedulerId, now = ARGV[1], tonumber(ARGV[2])
local opts = cjson.decode(ARGV[5])
local rep = opts["repeat"]
if type(rep) ~= "table" then rep = {} end
local cronNext = ARGV[7] and tonumber(ARGV[7])
if rep["pattern"] and not ARGV[7] then return {"pattern"} end

-- What Node's JobScheduler.upsertJobScheduler checks and builds before calling its script.
local count = tonumber(rep["count"])
local iteration = count and (count + 1) or 1
if rep["limit"] and iteration > tonumber(rep["limit"]) then return {"done"} end
if tonumber(rep["endDate"]) and now > tonumber(rep["endDate"]) then return {"done"} end
local every = tonumber(rep["every"])
rep["immediately"] = nil
if not (every and tonumber(rep["offset"]) and tonumber(rep["offset"]) ~= 0) then rep["offset"] = nil end
rep["count"] = iteration
opts["repeat"] = rep
-- a Node Job defaults attempts to 0 in memory, and that is what it passes on
if opts["attempts"] == nil then opts["attempts"] = 0 end
opts["prevMillis"] = nil
opts["timestamp"] = now
opts["repeatJobKey"] = schedulerId

local prevMillis = rcall("ZSCORE", q.repeatKey, schedulerId)
if not prevMillis then return {"none"} end
prevMillis = tonumber(prevMillis)
local schedulerKey = q.repeatKey .. ":" .. schedulerId
local attrs = rcall("HMGET", schedulerKey, "name", "data", "every", "startDate", "offset")
every = tonumber(attrs[3]) or every
local nextMillis
if every then
  local offset = tonumber(attrs[5] or rep["offset"] or 0)
  -- the next slot after prevMillis, aligned to `every` plus the scheduler's offset
  nextMillis = prevMillis + every
  if nextMillis < now then
    local aligned = math.floor(now / every) * every + (offset or 0)
    if aligned <= now then nextMillis = aligned + every else nextMillis = aligned end
  end
  nextMillis = math.floor(nextMillis)
elseif not ARGV[7] then
  return {"pattern"}
elseif not cronNext then
  return {"done"} -- cron-parser found no next run (past endDate): Node schedules nothing
else
  nextMillis = cronNext
  -- Node's getNextJobOpts keeps the run time as prevMillis (undefined, so absent, for `every`)
  opts["prevMillis"] = cronNext
end

local nextId = "repeat:" .. schedulerId .. ":" .. nextMillis
local current = "repeat:" .. schedulerId .. ":" .. prevMillis
if ARGV[4] ~= current then return {"none"} end
if rcall("EXISTS", q.prefix .. nextId) == 1 then
  rcall("XADD", q.events, "MAXLEN", "~", maxEvents(q.meta), "*", "event", "duplicated", "jobId", nextId)
  return {"duplicate", nextId}
end
rcall("ZADD", q.repeatKey, nextMillis, schedulerId)
rcall("HINCRBY", schedulerKey, "ic", 1)
rcall("INCR", KEYS[8])
local legacy = (metaMajor(q.meta) or 6) < 6
local template = attrs[2]
if legacy then
  template = template or ARGV[6]
  if template and template ~= "{}" then rcall("HSET", schedulerKey, "data", template) end
end
local delay = nextMillis - now
if delay < 0 then delay = 0 end
opts["delay"] = delay
opts["jobId"] = nextId
local extra = {"rjk", schedulerId}
if type(opts["de"]) == "table" and opts["de"]["id"] then
  table.insert(extra, "deid"); table.insert(extra, opts["de"]["id"])
end
storeAndEnqueue(q, nextId, attrs[1] or "", template or "{}", opts, ARGV[2], extra)
if legacy then rcall("HSET", KEYS[11], "nrjid", nextId) end
return {"created", nextId}
