--[[
  ladder_ack: the person acknowledged (a reply, a keypad answer, a delivered receipt where no
  answer was asked), or `ringback drain --end-ladders` ends it: a climbing ladder stops, once; the first acknowledgement wins. Answers the
  calls still ringing, for the caller to hang up (a later step's claim is refused from now on).

  KEYS[1] ladder record
  KEYS[2] ladder due index (global: absent = the caller writes it in a separate call)

  ARGV[1] how: "reply" | "keypad" | "delivered" | "drain"
  ARGV[2] runId
  ARGV[3] who (the number that acknowledged)

  A step still claimed and unmarked (its sender died, or its create's answer was lost) keeps
  the run in the due index: the sweep looks for its send and ends a call it finds.

  Returns {"stopped", pending, sid...} (pending: when the sweep should look again, ms on
  Redis's clock, "0" when no step is unmarked; the calls ringing), {"late", state} (already stopped or
  exhausted: the first one stands), {"asked"} (a delivered receipt of a question: only an
  answer acknowledges it), {"none"} (no ladder)
]]
local now = redisNowMs()
local state, step, question = unpack(rcall("HMGET", KEYS[1], "state", "step", "question"))
if not state then return {"none"} end
if ARGV[1] == "delivered" and question == "1" then return {"asked"} end
if state ~= "climbing" then return {"late", state} end
rcall("HSET", KEYS[1], "state", "stopped", "acked_by", ARGV[1], "acked_who", ARGV[3],
  "ended", now)
local pending = "0"
local out = {"stopped", pending}
for k = 1, tonumber(step) do
  local sid = rcall("HGET", KEYS[1], "ringing:" .. k)
  if sid then out[#out + 1] = sid end
  local claim = rcall("HGET", KEYS[1], "claim:" .. k)
  if claim and string.sub(claim, 1, 8) == "pending:" then pending = tostring(now) end
end
out[2] = pending
if KEYS[2] then
  if pending ~= "0" then rcall("ZADD", KEYS[2], now, ARGV[2]) else rcall("ZREM", KEYS[2], ARGV[2]) end
end
return out
