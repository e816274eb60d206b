--[[
  move_to_finished: complete or fail an active job, exactly as a BullMQ worker
  leaves it, and optionally take the next job in the same call.

  Order matters and follows BullMQ: pending children are checked before the
  lock; the lock is released before the active-list check; parents (flows)
  are updated before `atm` is incremented; the job is kept or removed per
  keepJobs; events completed|failed (+ retries-exhausted), then drained.

  KEYS[1] wait        KEYS[8]  paused
  KEYS[2] active      KEYS[9]  meta
  KEYS[3] prioritized KEYS[10] pc
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
local q = {prefix = ARGV[7], wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3],
  events = KEYS[4], stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7],
  paused = KEYS[8], meta = KEYS[9], pc = KEYS[10], marker = KEYS[14]}
local jobKey, jobId, now, target = KEYS[12], ARGV[1], ARGV[2], ARGV[5]
if rcall("EXISTS", jobKey) == 0 then return -1 end
if target == "completed" then
  if rcall("SCARD", jobKey .. ":dependencies") ~= 0 then return -4 end
  if rcall("ZCARD", jobKey .. ":unsuccessful") ~= 0 then return -9 end
end
local code = releaseLock(jobKey, q.stalled, ARGV[8], jobId)
if code < 0 then return code end
applyFields(jobKey, 18)

local attrs = rcall("HMGET", jobKey, "parentKey", "parent", "deid")
if rcall("LREM", q.active, -1, jobId) < 1 then return -3 end
rcall("XTRIM", q.events, "MAXLEN", "~", maxEvents(q.meta))

-- Deduplication: release the slot this job holds (a TTL'd slot expires by itself).
if attrs[3] then
  local dedupKey = q.prefix .. "de:" .. attrs[3]
  local pttl = rcall("PTTL", dedupKey)
  if pttl == 0 or (pttl == -1 and rcall("GET", dedupKey) == jobId) then
    rcall("DEL", dedupKey)
  end
  requeueDeduplicated(q, attrs[3], now)
end

-- Flows: tell the parent (possibly in another queue) what became of this child.
local parentKey = attrs[1] or ""
local parent = nil
if attrs[2] then parent = cjson.decode(attrs[2]) end
if parent == nil and parentKey ~= "" then
  local pid = string.match(parentKey, ".*:(.*)")
  parent = {id = pid, queueKey = string.sub(parentKey, 1, #parentKey - #pid - 1)}
end
if parent then
  local pq = parent["queueKey"] .. ":"
  local pKey = pq .. parent["id"]
  local deps = pKey .. ":dependencies"
  if target == "completed" then
    if rcall("SREM", deps, jobKey) == 1 then
      rcall("HSET", pKey .. ":processed", jobKey, ARGV[4])
      releaseParentIfDone(pq, parent["id"], now)
    end
  elseif parent["fpof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      rcall("ZADD", pKey .. ":unsuccessful", now, jobKey)
      if rcall("EXISTS", pKey) == 1 then
        local reason = "child " .. jobKey .. " failed"
        local holder = nil
        if rcall("ZSCORE", pq .. "waiting-children", parent["id"]) then
          holder = pq .. "waiting-children"
        elseif rcall("ZSCORE", pq .. "delayed", parent["id"]) then
          holder = pq .. "delayed"
          rcall("HSET", pKey, "delay", 0)
        end
        if holder then
          -- the parent must run now, to fail at once on its deferred failure
          rcall("ZREM", holder, parent["id"])
          rcall("HSET", pKey, "defa", reason)
          moveParentToReady(pq, parent["id"], now)
        elseif not rcall("ZSCORE", pq .. "failed", parent["id"]) then
          rcall("HSET", pKey, "defa", reason)
        end
      end
    end
  elseif parent["cpof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      rcall("HSET", pKey .. ":failed", jobKey, ARGV[4])
      releaseParent(pq, parent["id"], now)
    end
  elseif parent["idof"] or parent["rdof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      releaseParentIfDone(pq, parent["id"], now)
      if parent["idof"] then rcall("HSET", pKey .. ":failed", jobKey, ARGV[4]) end
    end
  end
end

local attemptsMade = rcall("HINCRBY", jobKey, "atm", 1)

local keepCount = tonumber(ARGV[9])
if keepCount ~= 0 then
  rcall("ZADD", KEYS[11], now, jobId)
  rcall("HSET", jobKey, ARGV[3], ARGV[4], "finishedOn", now)
  if target == "failed" then rcall("HDEL", jobKey, "defa") end
  if ARGV[10] ~= "" then
    local limit = tonumber(ARGV[11]) or 1000
    local oldest = tonumber(now) - tonumber(ARGV[10]) * 1000
    local old = rcall("ZREVRANGEBYSCORE", KEYS[11], oldest, "-inf", "LIMIT", 0, limit)
    for _, id in ipairs(old) do removeJob(q.prefix, id, now) end
    if #old > 0 then
      if #old < limit then
        rcall("ZREMRANGEBYSCORE", KEYS[11], "-inf", oldest)
      else
        for i = 1, #old, 5000 do
          rcall("ZREM", KEYS[11], unpack(old, i, math.min(i + 4999, #old)))
        end
      end
    end
  end
  if keepCount > 0 then
    local extra = rcall("ZREVRANGE", KEYS[11], keepCount, -1)
    for _, id in ipairs(extra) do removeJob(q.prefix, id, now) end
    rcall("ZREMRANGEBYRANK", KEYS[11], 0, -(keepCount + 1))
  end
else
  removeJob(q.prefix, jobId, now)
end

rcall("XADD", q.events, "*", "event", target, "jobId", jobId, ARGV[3], ARGV[4], "prev", "active")
if target == "failed" and attemptsMade >= tonumber(ARGV[12]) then
  rcall("XADD", q.events, "*", "event", "retries-exhausted", "jobId", jobId,
    "attemptsMade", attemptsMade)
end

if ARGV[13] ~= "" then
  local metricsKey, maxPoints = KEYS[13], tonumber(ARGV[13])
  local count = rcall("HINCRBY", metricsKey, "count", 1) - 1
  local prevTS = rcall("HGET", metricsKey, "prevTS")
  if not prevTS then
    rcall("HSET", metricsKey, "prevTS", now, "prevCount", 0)
  else
    local n = math.min(math.floor(now / 60000) - math.floor(prevTS / 60000), maxPoints)
    if n > 0 then
      local delta = count - rcall("HGET", metricsKey, "prevCount")
      rcall("LPUSH", metricsKey .. ":data", delta)
      for _ = 2, n do rcall("LPUSH", metricsKey .. ":data", 0) end
      rcall("LTRIM", metricsKey .. ":data", 0, maxPoints - 1)
      rcall("HSET", metricsKey, "prevCount", count, "prevTS", now)
    end
  end
end

if ARGV[6] == "1" then
  local w = {token = ARGV[8], lockDuration = ARGV[14], name = ARGV[15],
    limiterMax = ARGV[16], limiterDuration = ARGV[17]}
  local next = fetchNext(q, now, w)
  if next then return next end
end

if rcall("LLEN", q.wait) == 0 and rcall("LLEN", q.active) == 0
    and rcall("ZCARD", q.prioritized) == 0 then
  rcall("XADD", q.events, "*", "event", "drained")
end
return 0
