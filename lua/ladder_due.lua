--[[
  ladder_due: move the time a climbing ladder's next step may start. Sooner ("climb"): the
  step the caller read failed to reach the person (a text undelivered or refused, a call not
  answered, a receipt missing, a send held): the next step is due now, and why is kept on the
  record. Later ("defer"): the next step's person is in quiet hours. Only while the ladder still
  stands where the caller read it (a later step, a stop or the exhaustion leave it alone).

  KEYS[1] ladder record
  KEYS[2] ladder due index (global: absent = the caller writes it in a separate call)

  ARGV[1] "climb" | "defer"
  ARGV[2] the step the caller read ("" for climb: whichever step stands)
  ARGV[3] defer: the new due time (ms, Redis's clock); climb: why (kept on the record)
  ARGV[4] runId

  Returns {"moved", due} (ms, Redis's clock), {"kept", due} (already as soon, or the ladder
  moved on since the caller read it), {"over"} (stopped or exhausted), {"none"} (no ladder)
]]
local now = redisNowMs()
local state, step, due = unpack(rcall("HMGET", KEYS[1], "state", "step", "due"))
if not state then return {"none"} end
if state ~= "climbing" then return {"over"} end
if ARGV[2] ~= "" and step ~= ARGV[2] then return {"kept", due} end
local new
if ARGV[1] == "climb" then
  rcall("HSET", KEYS[1], "why:" .. step, ARGV[3])
  if tonumber(due) <= now then return {"kept", due} end
  new = now
else
  new = tonumber(ARGV[3])
  if new <= tonumber(due) then return {"kept", due} end
end
rcall("HSET", KEYS[1], "due", new)
if KEYS[2] then rcall("ZADD", KEYS[2], new, ARGV[4]) end
return {"moved", tostring(new)}
