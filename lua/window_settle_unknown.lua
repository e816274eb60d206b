--[[
  window_settle_unknown: the attempt's send cannot be proven either way (the lookup found a
  message it cannot rule out and no receipt links to the run). It was escalated ("may or may not have been sent"); it is never resent
  blind: the claim becomes a sent marker without a MessageSid, and the record says `unknown`.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index (global: absent = the caller writes it in a separate call)

  ARGV[1] attempt token
  ARGV[2] sent TTL (ms)
  ARGV[3] runId
  ARGV[4] reason

  Returns 1 settled, 0 the claim now belongs to someone else (left alone)
]]
local now = redisNowMs()
local v = rcall("GET", KEYS[1])
if v and v ~= "pending:" .. ARGV[1] then
  -- the same call again (its reply was lost and it was re-sent): answer as the first did
  if v == "sent:" then
    local rec = rcall("HMGET", KEYS[2], "token", "state")
    if rec[1] == ARGV[1] and rec[2] == "unknown" then return 1 end
  end
  return 0
end
rcall("SET", KEYS[1], "sent:", "PX", ARGV[2])
rcall("HSET", KEYS[2], "state", "unknown", "settled_at", now, "error", ARGV[4])
if KEYS[3] then rcall("ZREM", KEYS[3], ARGV[3]) end
return 1
