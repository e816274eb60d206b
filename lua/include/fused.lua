--[[
  fused: the single-Redis SMS finish of one job as a function, for finish_sent.lua (one job per
  call) and finish_sent_batch.lua (several jobs per call). Needs common.lua, finish.lua and
  window.lua. `K`/`A` are one job's KEYS/ARGV exactly as finish_sent.lua's header lays them out
  (the header is the contract); `now` is Redis's time read once by the calling script (the
  completion keeps the worker's A[2]); `batch` is nil, or the table a batch shares between its
  jobs so that once-per-call work (meta, the events trim, delayed promotion, the marker) is done
  once (see finish.lua and fetchNext in common.lua).
]]
-- The fetched job's run, when the job is a plain callback request the processor will run
-- (file-level functions: a batch defines them once per call, not once per job).
local function isE164(s) return #s >= 3 and #s <= 16 and string.find(s, "^%+[1-9]%d+$") ~= nil end
local function callbackOf(fields, names)
  local data, opts, ats, name = "", "{}", nil, ""
  for i = 1, #fields, 2 do
    local k = fields[i]
    if k == "data" then data = fields[i + 1]
    elseif k == "name" then name = fields[i + 1]
    elseif k == "opts" then opts = fields[i + 1]
    elseif k == "ats" then ats = fields[i + 1]
    elseif k == "defa" or k == "rjk" then return nil end
  end
  if ats ~= "1" then return nil end
  -- a job of another worker's name is left alone (the processor declines it)
  if not names or not string.find(names, "\n" .. name .. "\n", 1, true) then return nil end
  -- Printable ASCII without escapes, flat, strings only: there cjson and serde_json read the
  -- same text alike (cjson also takes raw control bytes, hex, NaN, Infinity, lone surrogates).
  -- Anything else (an accent, an escaped quote, a number) is left to the processor. (The whole
  -- text as one anchored run of printable characters: Lua's matcher then walks it in one loop,
  -- where an unanchored search for a character outside the class restarts at every byte,
  -- ~3 times the instructions; a plain find is a byte search.)
  if string.byte(opts, 1) ~= 123 or not string.find(data, "^[ -~]*$")
      or string.find(data, "\\", 1, true) then
    return nil
  end
  local ok, d = pcall(cjson.decode, data)
  if not ok or type(d) ~= "table" then return nil end
  for _, v in pairs(d) do
    if type(v) ~= "string" and type(v) ~= "boolean" and v ~= cjson.null then return nil end
  end
  -- a question's body gains its reply code in the processor, before its first claim
  if d["expectReply"] == true then return nil end
  local runId, to, body, from = d["runId"], d["to"], d["body"], d["from"]
  if type(runId) ~= "string" or #runId == 0 or #runId > 128 or string.find(runId, "{", 1, true)
      or string.find(runId, "}", 1, true) then
    return nil
  end
  if type(to) ~= "string" or not isE164(to) then return nil end
  if type(body) ~= "string" or #body > 1600 or not string.find(body, "[!-~]") then return nil end
  if from == nil or from == cjson.null then from = "" end
  if type(from) ~= "string" then return nil end
  if from ~= "" and not isE164(from) and not (#from <= 11 and not string.find(from, "[^%w ]")
      and string.find(from, "%a")) then
    return nil
  end
  local tz = d["timeZone"]
  if tz ~= nil and tz ~= cjson.null and type(tz) ~= "string" then return nil end
  if tz == cjson.null then tz = nil end
  -- `"ladder": false` is the one ask a fused job may carry (an object or a list is not fused)
  return {runId = runId, to = to, body = body, from = from,
    urgent = d["urgent"] == true and "1" or "", tz = tz or "",
    ask = d["ladder"] == false and '{"ladder":false}' or ""}
end

-- A key template ("\1" where the runId goes) filled with `runId`; each template's two halves
-- are split once per call (a batch's jobs share their templates).
local templateHalves = {}
local function runKey(template, runId)
  local halves = templateHalves[template]
  if halves == nil then
    local at = string.find(template, "\1", 1, true)
    halves = {string.sub(template, 1, at - 1), string.sub(template, at + 1)}
    templateHalves[template] = halves
  end
  return halves[1] .. runId .. halves[2]
end

local function finishSentOnce(K, A, now, batch)
  local mark = false
  if A[18] == "1" then
    mark = markSentRun({K[15], K[16], K[17], K[18], K[19], K[20], K[21]},
      {A[19], A[20], A[21], A[22], A[23], A[24], "sent"}, now)
  end

  local q, f, w = finishedArgs(36, K, A)
  q.batch = batch
  local code = moveToFinished(q, f)
  if code ~= 0 then return {code, mark, false} end
  local next = fetchNextOrDrain(q, f.now, w)
  if next == nil then return {0, mark, false} end
  if type(next[1]) ~= "table" or A[25] == "" then return {next, mark, false} end

  local req = callbackOf(next[1], A[35])
  if req == nil then return {next, mark, false} end
  -- inside a lost-writes window (window.lua's redisLost) the processor claims: its window_claim
  -- records the change and looks before it sends
  if redisLost(REDIS_IDENTITY, now, nil, false) then return {next, mark, false} end
  local claim = claimRun({runKey(A[25], req.runId), runKey(A[26], req.runId),
    runKey(A[27], req.runId), nil, K[17], K[22]},
    {A[28], next[2], A[29], "", A[30], A[31], A[21], req.to, req.from, req.body,
     req.runId, A[32], A[33], nil, req.urgent, req.tz, nil, req.ask}, now)
  table.insert(claim, req.runId)
  return {next, mark, claim}
end

-- The answer kept for a re-execution: the fetched job's fields are not kept (they are the job's
-- hash, read again on a replay: the job is still active under this worker's lock), only its id.
local function keptOf(r)
  local f = r[1]
  if type(f) == "table" and type(f[1]) == "table" then f = {false, f[2], f[3], f[4]} end
  return cmsgpack.pack({f, r[2], r[3]})
end

local function replayed(kept, prefix)
  local r = cmsgpack.unpack(kept)
  local f = r[1]
  if type(f) == "table" and f[1] == false then f[1] = rcall("HGETALL", prefix .. f[2]) end
  return r
end

-- One job's fused finish, safe to run twice: a call whose reply was lost is sent again with the
-- same call id, and its record K[23] (kept A[34] ms) hands back what the first execution
-- answered: the same completion, marker answer, next job and claim. Without the record a second
-- execution would find its own job finished (a false lock-lost) and leave the job it fetched in
-- active with nobody working on it. The record is read only when the finish finds its job or
-- its lock gone (-1, -2), which is what a re-execution finds: by then the marker has answered 0
-- (a marker run twice is no overrun; it sets the claim to the same `sent:` value again, which
-- only extends its TTL by the seconds between the two runs), and the finish has written nothing
-- (both codes are answered before its first write). A first execution never reads it.
local function finishSent(K, A, now, batch)
  local r = finishSentOnce(K, A, now, batch)
  local record = K[23]
  if record then
    if r[1] == -1 or r[1] == -2 then
      local kept = rcall("GET", record)
      if kept then return replayed(kept, A[7]) end
    end
    rcall("SET", record, keptOf(r), "PX", A[34])
  end
  return r
end
