--[[
  ladder_adopt: take over a step's claim whose sender is gone (crashed, or its create's answer
  lost): only while the claim is still the token the caller read and older than the lease (the
  sender's create timeout and the time Twilio's lists take to show a call: its create is over,
  and a call it made can be found). The adopter then looks for the step's send and creates it
  only when none is found and the ladder still climbs; on a stopped ladder a call found is
  marked (and so ended), none found closes the claim unsent (model/ladder.pml).

  KEYS[1] ladder record

  ARGV[1] step
  ARGV[2] the token the caller read
  ARGV[3] the adopter's token
  ARGV[4] the lease (ms)

  Returns {"adopted", first, state} (the claim's first start, ms: evidence is looked for from
  there; the ladder's state), {"young", until} (ms, Redis's clock), {"gone"} (not that claim
  any more)
]]
local now = redisNowMs()
local k = ARGV[1]
local claim, started, state = unpack(rcall("HMGET", KEYS[1], "claim:" .. k, "started:" .. k, "state"))
if claim ~= "pending:" .. ARGV[2] then return {"gone"} end
local first = tonumber(rcall("HGET", KEYS[1], "first:" .. k) or started)
if now < tonumber(started) + tonumber(ARGV[4]) then
  return {"young", tostring(tonumber(started) + tonumber(ARGV[4]))}
end
rcall("HSET", KEYS[1], "claim:" .. k, "pending:" .. ARGV[3], "started:" .. k, now, "first:" .. k, first)
return {"adopted", tostring(first), state}
