--[[
  finish: BullMQ's moveToFinished as functions, shared by move_to_finished.lua and the fused
  finish_sent.lua, so both leave exactly what a Node worker leaves. Needs common.lua.

  Both scripts take the same KEYS[1..14] and ARGV[1..17] (move_to_finished.lua's header is the
  contract); `finishedArgs()` reads them, so the layout is written down once.
]]

-- The queue keys and the finishing arguments of move_to_finished.lua's KEYS/ARGV layout, read
-- from `K`/`A` (a batch hands each job's part; default KEYS/ARGV).
-- `fieldsFrom`: the first index of `A` of field/value pairs to write first (none past its end).
local function finishedArgs(fieldsFrom, K, A)
  K, A = K or KEYS, A or ARGV
  local q = {prefix = A[7], wait = K[1], active = K[2], prioritized = K[3],
    events = K[4], stalled = K[5], limiter = K[6], delayed = K[7],
    paused = K[8], meta = K[9], pc = K[10], marker = K[14]}
  local f = {jobKey = K[12], jobId = A[1], now = A[2], field = A[3], value = A[4],
    target = A[5], token = A[8], keepCount = A[9], keepAge = A[10],
    keepLimit = A[11], attempts = A[12], metricsMax = A[13], targetKey = K[11],
    metricsKey = K[13], fieldsFrom = fieldsFrom, args = A}
  local w = nil
  if A[6] == "1" then
    w = {token = A[8], lockDuration = A[14], name = A[15],
      limiterMax = A[16], limiterDuration = A[17]}
  end
  return q, f, w
end

-- Complete or fail an active job (the order is BullMQ's; see move_to_finished.lua). Returns 0
-- finished, or the negative code that refused it.
local function moveToFinished(q, f)
  local jobKey, jobId, now, target = f.jobKey, f.jobId, f.now, f.target
  if rcall("EXISTS", jobKey) == 0 then return -1 end
  -- (Redis deletes an empty set, so one EXISTS of both answers "neither" in the usual case)
  if target == "completed"
      and rcall("EXISTS", jobKey .. ":dependencies", jobKey .. ":unsuccessful") ~= 0 then
    if rcall("SCARD", jobKey .. ":dependencies") ~= 0 then return -4 end
    if rcall("ZCARD", jobKey .. ":unsuccessful") ~= 0 then return -9 end
  end
  local code = releaseLock(jobKey, q.stalled, f.token, jobId)
  if code < 0 then return code end
  applyFields(jobKey, f.fieldsFrom, f.args)

  local attrs = rcall("HMGET", jobKey, "parentKey", "parent", "deid")
  if rcall("LREM", q.active, "-1", jobId) < 1 then return -3 end
  -- Meta once: the events cap here, and what the fetch that may follow reads (q.metaRead); the
  -- finish writes none of those fields. A batch (q.batch: several finishes in one call) reads
  -- it and trims the stream once, at its first finish: the trim is approximate ("~") anyway.
  local b = q.batch
  if b and b.metaRead then
    q.metaRead = b.metaRead
  else
    local m = rcall("HMGET", q.meta, "opts.maxLenEvents", "paused", "concurrency", "max", "duration")
    local maxLen = m[1]
    if not maxLen then
      maxLen = "10000"
      rcall("HSET", q.meta, "opts.maxLenEvents", maxLen)
    end
    q.metaRead = {m[2], m[3], m[4], m[5]}
    if b then b.metaRead = q.metaRead end
    rcall("XTRIM", q.events, "MAXLEN", "~", maxLen)
  end

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
        rcall("HSET", pKey .. ":processed", jobKey, f.value)
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
        rcall("HSET", pKey .. ":failed", jobKey, f.value)
        releaseParent(pq, parent["id"], now)
      end
    elseif parent["idof"] or parent["rdof"] then
      if rcall("SREM", deps, jobKey) == 1 then
        releaseParentIfDone(pq, parent["id"], now)
        if parent["idof"] then rcall("HSET", pKey .. ":failed", jobKey, f.value) end
      end
    end
  end

  local attemptsMade = rcall("HINCRBY", jobKey, "atm", "1")

  local keepCount = tonumber(f.keepCount)
  if keepCount ~= 0 then
    rcall("ZADD", f.targetKey, now, jobId)
    rcall("HSET", jobKey, f.field, f.value, "finishedOn", now)
    if target == "failed" then rcall("HDEL", jobKey, "defa") end
    if f.keepAge ~= "" then
      local limit = tonumber(f.keepLimit) or 1000
      local oldest = tonumber(now) - tonumber(f.keepAge) * 1000
      local old = rcall("ZREVRANGEBYSCORE", f.targetKey, oldest, "-inf", "LIMIT", 0, limit)
      for _, id in ipairs(old) do removeJob(q.prefix, id, now) end
      if #old > 0 then
        if #old < limit then
          rcall("ZREMRANGEBYSCORE", f.targetKey, "-inf", oldest)
        else
          for i = 1, #old, 5000 do
            rcall("ZREM", f.targetKey, unpack(old, i, math.min(i + 4999, #old)))
          end
        end
      end
    end
    if keepCount > 0 then
      local extra = rcall("ZREVRANGE", f.targetKey, int(keepCount), "-1")
      for _, id in ipairs(extra) do removeJob(q.prefix, id, now) end
      if #extra > 0 then rcall("ZREMRANGEBYRANK", f.targetKey, "0", int(-(keepCount + 1))) end
    end
  else
    removeJob(q.prefix, jobId, now)
  end

  rcall("XADD", q.events, "*", "event", target, "jobId", jobId, f.field, f.value, "prev", "active")
  if target == "failed" and attemptsMade >= tonumber(f.attempts) then
    rcall("XADD", q.events, "*", "event", "retries-exhausted", "jobId", jobId,
      "attemptsMade", attemptsMade)
  end

  if f.metricsMax ~= "" then
    local metricsKey, maxPoints = f.metricsKey, tonumber(f.metricsMax)
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
  return 0
end

-- After a finish: take the next job when `w` (fetch arguments) is given, else (or when nothing
-- could be taken) announce `drained` if the queue is empty. Returns fetchNext's answer or nil.
local function fetchNextOrDrain(q, now, w)
  if w then
    local next = fetchNext(q, now, w)
    if next then return next end
  end
  if rcall("LLEN", q.wait) == 0 and rcall("LLEN", q.active) == 0
      and rcall("ZCARD", q.prioritized) == 0 then
    rcall("XADD", q.events, "*", "event", "drained")
  end
  return nil
end

-- The group commit's layout (crates/store/src/group_commit.rs, `batch_layout`, says it in full): ARGV[1..3]
-- the number of jobs, keys and arguments per job; the first job's KEYS/ARGV in full; then per
-- further job a spec "<key positions>|<argument positions>" of what differs from the job before
-- it, its new arguments after it in ARGV, its new keys in turn in KEYS. Calls `run(i, K, A)` for
-- each job in order, with its KEYS/ARGV as tables laid out exactly as its single call's (the same
-- two tables each time, updated in place: `run` must not keep them past its turn). The whole
-- layout is checked before the first job runs; returns nil and the reason when it does not add
-- up (nothing written), else true.
local function batchParts(run)
  local n, nk, na = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  if n == nil or nk == nil or na == nil then return nil, "layout does not match its counts" end
  -- an empty group: nothing to run
  if n == 0 and #KEYS == 0 and #ARGV == 3 then return true end
  if n < 1 or #KEYS < nk or #ARGV < 3 + na then return nil, "layout does not match its counts" end
  local specs = {}
  local function positions(list, max)
    local out = {}
    for x in string.gmatch(list, "[^,]+") do
      local at = tonumber(x)
      if at == nil or at < 1 or at > max or at % 1 ~= 0 then return nil end
      out[#out + 1] = at
    end
    return out
  end
  -- each later job's spec (parsed once per distinct text) and where its values start
  local plan, kAt, aAt = {}, nk, 3 + na
  for i = 2, n do
    local text = ARGV[aAt + 1]
    if text == nil then return nil, "layout does not match its counts" end
    local spec = specs[text]
    if spec == nil then
      local bar = string.find(text, "|", 1, true)
      local ks = bar and positions(string.sub(text, 1, bar - 1), nk)
      local as = bar and positions(string.sub(text, bar + 1), na)
      if not (ks and as) then return nil, "bad spec " .. text end
      spec = {ks, as}
      specs[text] = spec
    end
    plan[i] = {spec, kAt, aAt + 1}
    kAt, aAt = kAt + #spec[1], aAt + 1 + #spec[2]
  end
  if kAt ~= #KEYS or aAt ~= #ARGV then return nil, "layout does not match its counts" end
  local K, A = {unpack(KEYS, 1, nk)}, {unpack(ARGV, 4, 3 + na)}
  for i = 1, n do
    local p = plan[i]
    if p then
      local ks, as, k0, a0 = p[1][1], p[1][2], p[2], p[3]
      for j = 1, #ks do K[ks[j]] = KEYS[k0 + j] end
      for j = 1, #as do A[as[j]] = ARGV[a0 + j] end
    end
    run(i, K, A)
  end
  return true
end
