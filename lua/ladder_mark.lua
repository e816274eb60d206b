--[[
  ladder_mark: a step's text or call was created: its claim becomes `sent:<sid>`. A call is
  remembered as ringing until its final status (unless that came first: `ended:<step>`); one
  created after the ladder stopped (the person acknowledged between the claim and the create)
  is answered "end": the caller hangs it up.

  KEYS[1] ladder record

  ARGV[1] step
  ARGV[2] the step's token
  ARGV[3] sid (the MessageSid or CallSid)
  ARGV[4] "call" | "text"
  ARGV[5] "1" = the step holds its number (ladder_number.lua): `give:<step>` is kept until the
          caller gave it back (a sender that stops between the two leaves it to the next visit)

  Returns "marked", "end" (a call on a stopped ladder), "not-ours" (the claim is another's)
]]
local k = ARGV[1]
if rcall("HGET", KEYS[1], "claim:" .. k) ~= "pending:" .. ARGV[2] then return "not-ours" end
rcall("HSET", KEYS[1], "claim:" .. k, "sent:" .. ARGV[3], "sent:" .. k, redisNowMs())
if ARGV[5] == "1" then rcall("HSET", KEYS[1], "give:" .. k, "1") end
if ARGV[4] == "call" and rcall("HEXISTS", KEYS[1], "ended:" .. k) == 0 then
  rcall("HSET", KEYS[1], "ringing:" .. k, ARGV[3])
  if rcall("HGET", KEYS[1], "state") == "stopped" then return "end" end
end
return "marked"
