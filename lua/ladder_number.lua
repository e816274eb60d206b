--[[
  ladder_number: one unconfirmed ladder call per number at a time. A call step takes its
  number before it looks for its call or creates it, and gives it back once its call is
  confirmed (marked with its CallSid) or the step settled without a call; a confirmed call's
  SID is kept in the number's confirmed calls, with its step. So while a step's call is
  unconfirmed (its create's answer lost, a 503), no other ladder creates a call to that number,
  and the calls to it that Twilio lists are either confirmed as another step's or this step's:
  the evidence names the step, not only the number (model/ladder_number.pml). A call confirmed
  as this very step's is its own (a Redis that forgot the step's mark kept its number's keys).

  KEYS[1] the number's call claim (a step holds it: "<runId> <step>")
  KEYS[2] the number's confirmed calls (ZSET "<CallSid> <runId> <step>" -> when it was
          confirmed, ms)

  ARGV[1] "take" | "give"
  ARGV[2] the step ("<runId> <step>")
  ARGV[3] take: the hold (ms) | give: the confirmed call's SID ("" = none)
  ARGV[4] how long a confirmed call is kept (ms)

  Returns take: "" taken (or already the step's), else the step holding it; give: 1 given back,
  0 held by another step (the SID is kept either way)
]]
if ARGV[1] == "take" then
  local holder = rcall("GET", KEYS[1])
  if holder and holder ~= ARGV[2] then return holder end
  rcall("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
  return ""
end
if ARGV[3] ~= "" then
  local now = redisNowMs()
  rcall("ZADD", KEYS[2], now, ARGV[3] .. " " .. ARGV[2])
  rcall("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - tonumber(ARGV[4]))
  rcall("PEXPIRE", KEYS[2], ARGV[4])
end
if rcall("GET", KEYS[1]) == ARGV[2] then
  rcall("DEL", KEYS[1])
  return 1
end
return 0
