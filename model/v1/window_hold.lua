--[[
  window_hold: the send's outcome is unknown (timeout, connection lost after sending, 5xx).
  Keep the claim, for long enough to resolve it, and mark the attempt ambiguous so whoever
  comes next looks for evidence before sending.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index

  ARGV[1] attempt token
  ARGV[2] now (ms)
  ARGV[3] hold (ms)
  ARGV[4] reason
  ARGV[5] runId

  Returns 1 held, 0 the claim now belongs to someone else (left alone)
]]
local v = rcall("GET", KEYS[1])
if v and v ~= "pending:" .. ARGV[1] then return 0 end
rcall("SET", KEYS[1], "pending:" .. ARGV[1], "PX", ARGV[3])
if rcall("HGET", KEYS[2], "token") == ARGV[1] and rcall("HGET", KEYS[2], "state") ~= "ambiguous" then
  rcall("HSET", KEYS[2], "state", "ambiguous", "since", ARGV[2], "error", ARGV[4])
end
rcall("HSET", KEYS[2], "touched", ARGV[2])
rcall("ZADD", KEYS[3], tonumber(ARGV[2]) + math.floor(tonumber(ARGV[3]) / 2), ARGV[5])
return 1
