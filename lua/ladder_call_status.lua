--[[
  ladder_call_status: a status callback of a ladder's call (Twilio's `initiated`, `ringing`,
  `in-progress`, `completed`, `busy`, `no-answer`, `failed`, `canceled`), ranked: a status
  arriving after a later one, or twice, changes nothing. The call's SID is kept as the step's
  evidence (a create whose answer was lost is found by it), and a call that ended no longer
  rings (`ended:<step>` keeps that it ended, for a mark that comes after).

  KEYS[1] ladder record

  ARGV[1] step
  ARGV[2] CallSid
  ARGV[3] CallStatus
  ARGV[4] its rank (higher is later; final statuses rank highest)
  ARGV[5] "1" when the status is final
  ARGV[6] AnsweredBy ("" when Twilio gave none)

  Returns {applied, state, step}: applied "1" when the status was newer than the one kept,
  "0" for a repeat or an older one; the ladder's state and its last started step ("" and "0"
  when the run has no ladder)
]]
local k = ARGV[1]
local state, step = unpack(rcall("HMGET", KEYS[1], "state", "step"))
if not state then return {"0", "", "0"} end
rcall("HSETNX", KEYS[1], "callsid:" .. k, ARGV[2])
local rank = tonumber(rcall("HGET", KEYS[1], "rank:" .. k) or "-1")
if tonumber(ARGV[4]) <= rank then return {"0", state, step} end
rcall("HSET", KEYS[1], "rank:" .. k, ARGV[4], "status:" .. k, ARGV[3])
if ARGV[6] ~= "" then rcall("HSET", KEYS[1], "answered_by:" .. k, ARGV[6]) end
-- `ended:<k>`: a final status may come before the create's mark, which must not then keep the
-- call ringing
if ARGV[5] == "1" then rcall("HDEL", KEYS[1], "ringing:" .. k); rcall("HSET", KEYS[1], "ended:" .. k, ARGV[3]) end
return {"1", state, step}
