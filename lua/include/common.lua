--[[
  ringback: helpers shared by every script in lua/ (prepended to each script by
  crates/store/src/scripts.rs, so a script is always one self-contained EVAL body).

  These are our own functions written to BullMQ's Redis data layout (job hashes,
  the wait/active/delayed/prioritized lists and sets, the marker, the events stream;
  docs/compatibility.md). Nothing here reads KEYS
  or ARGV; callers pass every key they use.
]]
local rcall = redis.call

-- Redis's own clock, in ms: the one clock of every window decision (workers' clocks may be
-- skewed; Redis 7 replicates a script's effects, so reading TIME before writing is allowed).
local function redisNowMs()
  local t = rcall("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A whole number as the string a command argument needs. Lua turns a number argument into a
-- string with "%.14g", a floating-point conversion that costs more than most commands' own work
-- (a profile of Redis put ~4 % of its CPU per SMS job in it); "%d" is an integer one.
-- Hot paths pass strings: ARGV as they came, literals quoted, and computed numbers through here.
-- Each number's text is kept for the rest of the call (the table is the script call's: a few
-- dozen numbers at most): a batch's jobs share one `now` and a few sums of it, each converted
-- several times per job, and a `%d` format costs more than a table lookup (an SMS job made ~6
-- conversions when only the last text was kept, by callgrind of Redis).
local intText = {}
local function int(n)
  local text = intText[n]
  if text == nil then
    text = string.format("%d", n)
    -- (NaN is no table key; it never comes here, but a bug must not become a script error)
    if n == n then intText[n] = text end
  end
  return text
end

-- Split a full job key "<prefix>:<queue>:<id>" given the queue key prefix length.
local function queuePrefixOf(jobKey, jobId)
  return string.sub(jobKey, 1, #jobKey - #jobId)
end

-- BullMQ major version recorded in meta.version ("bullmq:5.81.5"); nil when absent.
local function metaMajor(metaKey)
  local v = rcall("HGET", metaKey, "version")
  if v then
    local major = string.match(v, ":(%d+)%.")
    if major then return tonumber(major) end
  end
  return nil
end

-- Where a job that becomes ready goes, and whether the queue may be woken.
-- v5 queues move jobs into the `paused` list while paused; v6 keeps them in
-- `wait` and only flags meta.paused. Returns targetList, pausedOrMaxed.
local function readyTarget(metaKey, activeKey, waitKey, pausedKey)
  local m = rcall("HMGET", metaKey, "paused", "concurrency")
  if m[1] then
    local major = metaMajor(metaKey)
    if major and major < 6 then return pausedKey, true end
    return waitKey, true
  end
  if m[2] and rcall("LLEN", activeKey) >= tonumber(m[2]) then
    return waitKey, true
  end
  return waitKey, false
end

local function addBaseMarker(markerKey, pausedOrMaxed)
  if not pausedOrMaxed then rcall("ZADD", markerKey, 0, "0") end
end

local function nextDelayedTimestamp(delayedKey)
  local r = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if r[2] then return tonumber(r[2]) / 0x1000 end
  return nil
end

local function addDelayMarker(markerKey, delayedKey)
  local ts = nextDelayedTimestamp(delayedKey)
  if ts then rcall("ZADD", markerKey, ts, "1") end
end

local function priorityScore(priority, pcKey)
  local counter = rcall("INCR", pcKey)
  return priority * 0x100000000 + counter % 0x100000000
end

local function maxEvents(metaKey)
  local n = rcall("HGET", metaKey, "opts.maxLenEvents")
  if not n then
    n = 10000
    rcall("HSET", metaKey, "opts.maxLenEvents", n)
  end
  return n
end

-- Delayed-set score for a job due `delay` ms after `now`: due * 4096 + a sequence number that
-- keeps FIFO order within one millisecond. Returns score, due.
local function delayedScore(delayedKey, now, delay)
  local due = tonumber(now)
  if delay > 0 then due = due + delay end
  local minScore, maxScore = due * 0x1000, (due + 1) * 0x1000 - 1
  local last = rcall("ZREVRANGEBYSCORE", delayedKey, maxScore, minScore, "WITHSCORES", "LIMIT", 0, 1)
  if last[2] then return math.min(tonumber(last[2]) + 1, maxScore), due end
  return minScore, due
end

-- Put a job id back where ready jobs live: prioritized set or a list.
local function enqueueReady(q, jobId, pushCmd)
  local jobKey = q.prefix .. jobId
  local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
  local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
  if priority == 0 then
    rcall(pushCmd, target, jobId)
  else
    rcall("ZADD", q.prioritized, priorityScore(priority, q.pc), jobId)
  end
  addBaseMarker(q.marker, pausedOrMaxed)
end

-- Promote delayed jobs that are due (at most 1000 per call).
local function promoteDelayed(q, now)
  local ids = rcall("ZRANGEBYSCORE", q.delayed, "0", int((tonumber(now) + 1) * 0x1000 - 1), "LIMIT", "0", "1000")
  if #ids == 0 then return end
  rcall("ZREM", q.delayed, unpack(ids))
  local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
  for _, id in ipairs(ids) do
    local jobKey = q.prefix .. id
    local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
    if priority == 0 then
      rcall("LPUSH", target, id)
    else
      rcall("ZADD", q.prioritized, priorityScore(priority, q.pc), id)
    end
    rcall("XADD", q.events, "*", "event", "waiting", "jobId", id, "prev", "delayed")
    rcall("HSET", jobKey, "delay", 0)
  end
  addBaseMarker(q.marker, pausedOrMaxed)
end

-- Release the lock held by `token`: 0 ok, -2 missing, -6 owned by another token.
local function releaseLock(jobKey, stalledKey, token, jobId)
  if token == "0" then return 0 end
  local current = rcall("GET", jobKey .. ":lock")
  if current == token then
    rcall("DEL", jobKey .. ":lock")
    rcall("SREM", stalledKey, jobId)
    return 0
  end
  if current then return -6 end
  return -2
end

-- Trailing arguments from index `from` (of `args`, default ARGV) are field/value pairs to HSET
-- on the job.
local function applyFields(jobKey, from, args)
  args = args or ARGV
  if #args >= from + 1 then
    rcall("HSET", jobKey, unpack(args, from))
  end
end

-- Take the next job, lock it and return BullMQ's 4-tuple
-- {fields, jobId, rateLimitTtl, nextDelayedMs}, {0,0,pttl,0} when rate
-- limited, {0,0,0,0} when paused or maxed, {0,0,0,dueMs} when only delayed
-- jobs remain, and nil when there is nothing at all.
-- `w` = {token, lockDuration, name, limiterMax, limiterDuration} (strings, "" = unset).
-- `q.metaRead`: those four meta fields when the caller's finish already read them (one HMGET).
local function fetchNext(q, now, w)
  local m = q.metaRead or rcall("HMGET", q.meta, "paused", "concurrency", "max", "duration")
  local pausedOrMaxed = m[1] ~= false and m[1] ~= nil
  if not pausedOrMaxed and m[2] then
    pausedOrMaxed = rcall("LLEN", q.active) >= tonumber(m[2])
  end
  -- a batch (q.batch) promotes once per call: the jobs of one call share its moment
  local b = q.batch
  if not (b and b.promoted) then
    promoteDelayed(q, now)
    if b then b.promoted = true end
  end

  local maxJobs = tonumber(m[3] or (w.limiterMax ~= "" and w.limiterMax) or nil)
  if maxJobs and maxJobs <= tonumber(rcall("GET", q.limiter) or 0) then
    local pttl = rcall("PTTL", q.limiter)
    if pttl == 0 then rcall("DEL", q.limiter) end
    if pttl > 0 then return {0, 0, pttl, 0} end
  end
  if pausedOrMaxed then return {0, 0, 0, 0} end

  local jobId = rcall("RPOPLPUSH", q.wait, q.active)
  if jobId and string.sub(jobId, 1, 2) == "0:" then
    -- pre-v5 marker left in the wait list
    rcall("LREM", q.active, 1, jobId)
    jobId = rcall("RPOPLPUSH", q.wait, q.active)
  end
  if not jobId then
    local p = rcall("ZPOPMIN", q.prioritized)
    if p[1] then
      jobId = p[1]
      rcall("LPUSH", q.active, jobId)
    else
      rcall("DEL", q.pc)
    end
  end
  if not jobId then
    local ts = nextDelayedTimestamp(q.delayed)
    if ts then return {0, 0, 0, ts} end
    return nil -- nothing at all: callers decide (move_to_active answers {0,0,0,0})
  end

  local jobKey = q.prefix .. jobId
  if maxJobs and rcall("HEXISTS", jobKey, "defa") == 0 then
    if tonumber(rcall("INCR", q.limiter)) == 1 then
      local duration = m[4]
      if w.limiterDuration ~= "" then duration = w.limiterDuration end
      rcall("PEXPIRE", q.limiter, math.floor(math.abs(tonumber(duration or 0))))
    end
  end
  if w.token ~= "0" then
    rcall("SET", jobKey .. ":lock", w.token, "PX", w.lockDuration)
  end
  rcall("XADD", q.events, "*", "event", "active", "jobId", jobId, "prev", "waiting")
  if w.name ~= "" then
    rcall("HSET", jobKey, "processedOn", now, "pb", w.name)
  else
    rcall("HSET", jobKey, "processedOn", now)
  end
  rcall("HINCRBY", jobKey, "ats", "1")
  -- the same member each time: a batch writes it once, at its end
  if b then b.marker = q.marker else rcall("ZADD", q.marker, "0", "0") end
  return {rcall("HGETALL", jobKey), jobId, 0, 0}
end

local function deleteJobKeys(jobKey)
  rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Parent bookkeeping (flows). A parent lives in its own queue: `pq` is that
-- queue's key prefix "<prefix>:<queue>:" and every key is built from it.
local function parentQueue(pq)
  return {prefix = pq, wait = pq .. "wait", active = pq .. "active", paused = pq .. "paused",
    meta = pq .. "meta", marker = pq .. "marker", prioritized = pq .. "prioritized",
    pc = pq .. "pc", delayed = pq .. "delayed", events = pq .. "events"}
end

-- Move a parent that no longer waits for children to delayed (if it has a
-- delay) or to its queue's ready list, announcing it in its own queue.
local function moveParentToReady(pq, parentId, now)
  local parentKey = pq .. parentId
  local p = parentQueue(pq)
  local delay = tonumber(rcall("HGET", parentKey, "delay")) or 0
  if delay > 0 then
    local due = tonumber(now) + delay
    rcall("ZADD", p.delayed, due * 0x1000, parentId)
    rcall("XADD", p.events, "*", "event", "delayed", "jobId", parentId, "delay", due)
    addDelayMarker(p.marker, p.delayed)
  else
    enqueueReady(p, parentId, "RPUSH")
    rcall("XADD", p.events, "*", "event", "waiting", "jobId", parentId, "prev", "waiting-children")
  end
end

local function releaseParent(pq, parentId, now)
  if rcall("EXISTS", pq .. parentId) == 0 then return end
  if rcall("ZREM", pq .. "waiting-children", parentId) == 1 then
    moveParentToReady(pq, parentId, now)
  end
end

local function releaseParentIfDone(pq, parentId, now)
  if rcall("SCARD", pq .. parentId .. ":dependencies") == 0 then
    releaseParent(pq, parentId, now)
  end
end

-- A finished child detaches from its parent (used when the child is deleted).
local function detachFromParent(jobKey, now)
  local parentKey = rcall("HGET", jobKey, "parentKey")
  if parentKey and parentKey ~= "" and rcall("SREM", parentKey .. ":dependencies", jobKey) == 1 then
    local parentId = string.match(parentKey, ".*:(.*)")
    releaseParentIfDone(queuePrefixOf(parentKey, parentId), parentId, now)
  end
end

local function removeJob(prefix, jobId, now)
  local jobKey = prefix .. jobId
  detachFromParent(jobKey, now)
  deleteJobKeys(jobKey)
end

-- Store a new job (as BullMQ's storeJob) and enqueue it: delayed when opts.delay > 0, else
-- prioritized or into wait (lifo: the front). `extra` = more hash fields (parentKey, rjk, deid).
local function storeAndEnqueue(q, jobId, name, data, opts, now, extra)
  local jobKey = q.prefix .. jobId
  local delay = tonumber(opts["delay"]) or 0
  local priority = tonumber(opts["priority"]) or 0
  local fields = {"name", name, "data", data, "opts", cjson.encode(opts), "timestamp", now,
    "delay", delay, "priority", priority}
  for _, f in ipairs(extra) do table.insert(fields, f) end
  rcall("HMSET", jobKey, unpack(fields))
  rcall("XADD", q.events, "*", "event", "added", "jobId", jobId, "name", name)
  local limit = maxEvents(q.meta)
  if delay ~= 0 then
    local score, due = delayedScore(q.delayed, now, delay)
    rcall("ZADD", q.delayed, score, jobId)
    rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "delayed", "jobId", jobId, "delay", due)
    addDelayMarker(q.marker, q.delayed)
  else
    local target, pausedOrMaxed = readyTarget(q.meta, q.active, q.wait, q.paused)
    if priority > 0 then
      rcall("ZADD", q.prioritized, priorityScore(priority, q.pc), jobId)
    else
      rcall(opts["lifo"] and "RPUSH" or "LPUSH", target, jobId)
    end
    addBaseMarker(q.marker, pausedOrMaxed)
    rcall("XADD", q.events, "MAXLEN", "~", limit, "*", "event", "waiting", "jobId", jobId)
  end
end

-- Deduplication with keepLastIfActive: a job added while its slot-holder was active was parked
-- in `dn:<id>`; when the holder finishes it becomes a real job (BullMQ's requeue), holding the
-- slot in turn.
local function requeueDeduplicated(q, dedupId, now)
  local nextKey = q.prefix .. "dn:" .. dedupId
  if rcall("EXISTS", nextKey) == 0 then return end
  local d = rcall("HMGET", nextKey, "name", "data", "opts", "pk", "pd", "pdk", "rjk", "jid")
  local counter = rcall("INCR", q.prefix .. "id") .. ""
  local jobId = d[8] or counter
  local opts = cjson.decode(d[3])
  local de = opts["de"]
  local dedupKey = q.prefix .. "de:" .. dedupId
  if de and de["keepLastIfActive"] then
    rcall("SET", dedupKey, jobId)
  elseif de and de["ttl"] and tonumber(de["ttl"]) > 0 then
    rcall("SET", dedupKey, jobId, "PX", de["ttl"])
  else
    rcall("SET", dedupKey, jobId)
  end
  local extra = {}
  if d[4] then
    table.insert(extra, "parentKey"); table.insert(extra, d[4])
    table.insert(extra, "parent"); table.insert(extra, d[5])
  end
  if d[7] then table.insert(extra, "rjk"); table.insert(extra, d[7]) end
  if de and de["id"] then table.insert(extra, "deid"); table.insert(extra, de["id"]) end
  storeAndEnqueue(q, jobId, d[1], d[2], opts, now, extra)
  if d[6] then rcall("SADD", d[6], q.prefix .. jobId) end
  rcall("DEL", nextKey)
end
