--[[
  window_hold: the send's outcome is unknown (timeout, connection lost after sending, 5xx), or a
  resolver is still looking for evidence. Keep the claim (a lease, refreshed), mark the attempt
  ambiguous so whoever comes next looks for evidence before sending, and record the touch that
  tells the orphan sweep a resolver is alive.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index (global: absent = the caller writes it in a separate call)

  ARGV[1] attempt token
  ARGV[2] claim lease (ms)
  ARGV[3] hold (ms): the sweep looks at the attempt if no one touches it for half of this
  ARGV[4] reason
  ARGV[5] runId

  Returns 1 held, 0 the claim now belongs to someone else (left alone)
]]
local now = redisNowMs()
local v = rcall("GET", KEYS[1])
if v and v ~= "pending:" .. ARGV[1] then return 0 end
if rcall("HGET", KEYS[2], "token") ~= ARGV[1] then return 0 end
rcall("SET", KEYS[1], "pending:" .. ARGV[1], "PX", ARGV[2])
if rcall("HGET", KEYS[2], "state") ~= "ambiguous" then
  rcall("HSET", KEYS[2], "state", "ambiguous", "since", now, "error", ARGV[4])
end
rcall("HSET", KEYS[2], "touched", now)
if KEYS[3] then rcall("ZADD", KEYS[3], now + math.floor(tonumber(ARGV[3]) / 2), ARGV[5]) end
return 1
