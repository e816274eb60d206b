--[[
  ladder_ack: the person acknowledged (a reply, a keypad answer, a delivered receipt where no
  answer was asked): a climbing ladder stops, once; the first acknowledgement wins. Answers the
  calls still ringing, for the caller to hang up (a later step's claim is refused from now on).

  KEYS[1] ladder record
  KEYS[2] ladder due index (global: absent = the caller writes it in a separate call)

  ARGV[1] how: "reply" | "keypad" | "delivered"
  ARGV[2] runId
  ARGV[3] who (the number that acknowledged)

  Returns {"stopped", sid...} (the calls ringing), {"late", state} (already stopped or
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
if KEYS[2] then rcall("ZREM", KEYS[2], ARGV[2]) end
local out = {"stopped"}
for k = 1, tonumber(step) do
  local sid = rcall("HGET", KEYS[1], "ringing:" .. k)
  if sid then out[#out + 1] = sid end
end
return out
