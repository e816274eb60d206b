--[[
  move_stalled_jobs_to_wait: one two-phase stall sweep, as BullMQ workers run it.

  Throttled queue-wide by `stalled-check` (SET PX stalledInterval): while it
  exists the sweep is a no-op, so one effective sweep happens per interval
  whatever the number of workers.
  Phase 2 (previous sweep's suspects): every id still in `stalled` whose lock
  is gone and that is still in `active` is put back at the front of wait,
  `stc` is incremented, and past maxStalledCount the deferred failure `defa`
  is set (the next worker to fetch it fails it without running it) unless the
  job belongs to a live job scheduler. Events: waiting (prev active), stalled.
  Phase 1: every id now in `active` becomes a suspect for the next sweep.

  KEYS[1] stalled      KEYS[6] paused
  KEYS[2] wait         KEYS[7] marker
  KEYS[3] active       KEYS[8] events
  KEYS[4] stalled-check  KEYS[9] repeat
  KEYS[5] meta

  ARGV[1] maxStalledCount
  ARGV[2] key prefix "<prefix>:<queue>:"
  ARGV[3] now (ms)
  ARGV[4] stalledInterval (ms)

  Returns the list of job ids moved back to wait.
]]
local q = {prefix = ARGV[2], stalled = KEYS[1], wait = KEYS[2], active = KEYS[3],
  meta = KEYS[5], paused = KEYS[6], marker = KEYS[7], events = KEYS[8]}
local maxStalled = tonumber(ARGV[1])
if rcall("EXISTS", KEYS[4]) == 1 then return {} end
rcall("SET", KEYS[4], ARGV[3], "PX", ARGV[4])
rcall("XTRIM", q.events, "MAXLEN", "~", maxEvents(q.meta))

local moved = {}
local suspects = rcall("SMEMBERS", q.stalled)
if #suspects > 0 then
  rcall("DEL", q.stalled)
  for _, jobId in ipairs(suspects) do
    if string.sub(jobId, 1, 2) == "0:" then
      rcall("LREM", q.active, 1, jobId)
    else
      local jobKey = q.prefix .. jobId
      if rcall("EXISTS", jobKey .. ":lock") == 0 and rcall("LREM", q.active, 1, jobId) > 0 then
        local stalls = rcall("HINCRBY", jobKey, "stc", 1)
        local schedulerId = rcall("HGET", jobKey, "rjk")
        local liveScheduler = false
        if schedulerId then
          liveScheduler = rcall("EXISTS", KEYS[9] .. ":" .. schedulerId) == 1
            or rcall("ZSCORE", KEYS[9], schedulerId) ~= false
        end
        if stalls > maxStalled and not liveScheduler then
          rcall("HSET", jobKey, "defa", "job stalled more than allowable limit")
        end
        local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
        rcall("RPUSH", target, jobId)
        addBaseMarker(q.marker, pausedOrMaxed)
        rcall("XADD", q.events, "*", "event", "waiting", "jobId", jobId, "prev", "active")
        rcall("XADD", q.events, "*", "event", "stalled", "jobId", jobId)
        table.insert(moved, jobId)
      end
    end
  end
end

local active = rcall("LRANGE", q.active, 0, -1)
for i = 1, #active, 5000 do
  rcall("SADD", q.stalled, unpack(active, i, math.min(i + 4999, #active)))
end
return moved
