--[[
  finish_sent: the single-Redis SMS finish (issue 12): the sent marker, the job's completion, the
  next job's fetch and that job's claim, in one call: one Redis round trip per SMS job.

  1. The sent marker (window_mark_sent.lua's step), when ARGV[18] = "1": written first and
     whatever the job's lock says, because the message WAS sent.
  2. The completion (move_to_finished.lua's step, KEYS[1..14] and ARGV[1..17] as its header
     says): Node sees exactly what move_to_finished leaves; the lock check decides the job part
     only.
  3. Fetch next (as move_to_finished), and for the fetched job, the claim of its run
     (window_claim.lua's step), when ARGV[25] (the claim key template) is not "". The run's keys
     come from the job's data, so they are not declared: standalone Redis only (a Cluster keeps
     the separate calls). The claim is skipped, and the worker's processor claims as usual, for
     any job the processor would not run as it stands: a deferred failure, a scheduler's job,
     a job started before (the started limit), options that are not an object, or data that
     is not a plain callback request. The check is a strict subset of `CallbackRequest::parse`
     (printable ASCII without escapes, flat, strings only): a job it leaves out is claimed by
     the processor as usual, so the subset costs speed, never correctness.

  KEYS[1..14] as move_to_finished.lua
  KEYS[15] claim key (this run)            KEYS[19] callback record
  KEYS[16] attempt record                  KEYS[20] its history
  KEYS[17] open-attempts index             KEYS[21] the reconcile set
  KEYS[18] message link (the MessageSid's) KEYS[22] recent-runs index (the next run's claim)

  ARGV[1..17] as move_to_finished.lua (ARGV[5] = "completed")
  ARGV[18] "1" write the sent marker, "0" not (the run was found sent: nothing to mark)
  ARGV[19] attempt token     ARGV[22] runId
  ARGV[20] MessageSid        ARGV[23] the status Twilio answered
  ARGV[21] sent TTL (ms)     ARGV[24] poll the message after (ms)
  The next job's claim (window_claim.lua's ARGV where named):
  ARGV[25] claim key template, "\1" where the runId goes ("" = claim nothing)
  ARGV[26] attempt record template    ARGV[27] callback record template
  ARGV[28] new attempt token          ARGV[29] worker id
  ARGV[30] pending TTL (ms)           ARGV[31] hold (ms)
  ARGV[32] claim lease (ms)           ARGV[33] recent-runs cap (members)

  Returns {finish, mark, claim}:
    finish  move_to_finished's answer (0, a negative code, or the next job's 4-tuple)
    mark    window_mark_sent's answer (0 within the window, 1 overrun), false when not asked
    claim   window_claim's reply for the fetched job's run followed by that runId, or false
            (nothing fetched, or the claim was left to the processor)
]]
-- Redis's time, read once for the window's steps (the completion keeps the worker's ARGV[2])
local now = redisNowMs()
local mark = false
if ARGV[18] == "1" then
  mark = markSentRun({KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20], KEYS[21]},
    {ARGV[19], ARGV[20], ARGV[21], ARGV[22], ARGV[23], ARGV[24], "sent"}, now)
end

local q, f, w = finishedArgs(34)
local code = moveToFinished(q, f)
if code ~= 0 then return {code, mark, false} end
local next = fetchNextOrDrain(q, f.now, w)
if next == nil then return {0, mark, false} end
if type(next[1]) ~= "table" or ARGV[25] == "" then return {next, mark, false} end

-- The fetched job's run, when the job is a plain callback request the processor will run.
local function isE164(s) return #s >= 3 and #s <= 16 and string.find(s, "^%+[1-9]%d+$") ~= nil end
local function callbackOf(fields)
  local data, opts, ats = "", "{}", nil
  for i = 1, #fields, 2 do
    local k = fields[i]
    if k == "data" then data = fields[i + 1]
    elseif k == "opts" then opts = fields[i + 1]
    elseif k == "ats" then ats = fields[i + 1]
    elseif k == "defa" or k == "rjk" then return nil end
  end
  if ats ~= "1" then return nil end
  -- Printable ASCII without escapes, flat, strings only: there cjson and serde_json read the
  -- same text alike (cjson also takes raw control bytes, hex, NaN, Infinity, lone surrogates).
  -- Anything else (an accent, an escaped quote, a number) is left to the processor.
  if string.byte(opts, 1) ~= 123 or string.find(data, "[^ -~]") or string.find(data, "\\", 1, true) then
    return nil
  end
  local ok, d = pcall(cjson.decode, data)
  if not ok or type(d) ~= "table" then return nil end
  for _, v in pairs(d) do
    if type(v) ~= "string" and type(v) ~= "boolean" and v ~= cjson.null then return nil end
  end
  local runId, to, body, from = d["runId"], d["to"], d["body"], d["from"]
  if type(runId) ~= "string" or #runId == 0 or #runId > 128 or string.find(runId, "[{}]") then
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
  return {runId = runId, to = to, body = body, from = from}
end

local req = callbackOf(next[1])
if req == nil then return {next, mark, false} end
local function key(template)
  local at = string.find(template, "\1", 1, true)
  return string.sub(template, 1, at - 1) .. req.runId .. string.sub(template, at + 1)
end
local claim = claimRun({key(ARGV[25]), key(ARGV[26]), key(ARGV[27]), KEYS[17], KEYS[22]},
  {ARGV[28], next[2], ARGV[29], "", ARGV[30], ARGV[31], ARGV[21], req.to, req.from, req.body,
   req.runId, ARGV[32], ARGV[33]}, now)
table.insert(claim, req.runId)
return {next, mark, claim}
