--[[
  window_release: give the claim up because Twilio did not take the message (a permanent
  error, a rate limit, refused credentials). Compare-and-delete: only our own pending claim is
  removed.

  A caller with no queue job behind it (the orphan sweep) passes `retry in` > 0: the attempt
  stays open as `retry` in the open-attempts index, due then, so the sweep sends it later. No
  path gives a claim up while nothing would retry the callback.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index

  ARGV[1] attempt token
  ARGV[2] retry in (ms): 0 = a queue job retries it (or nothing should: send-failed)
  ARGV[3] reason (kept on the record for escalation and `ringback status`)
  ARGV[4] record state to write: "released" | "send-failed"
  ARGV[5] runId

  Returns 1 released, 0 the claim was not ours (left alone)
]]
local now = redisNowMs()
local retryIn = tonumber(ARGV[2]) or 0
local released = 0
if rcall("GET", KEYS[1]) == "pending:" .. ARGV[1] then
  rcall("DEL", KEYS[1])
  released = 1
end
if rcall("HGET", KEYS[2], "token") == ARGV[1] then
  if retryIn > 0 and ARGV[4] == "released" then
    rcall("HSET", KEYS[2], "state", "retry", "released_at", now, "error", ARGV[3])
    rcall("ZADD", KEYS[3], now + retryIn, ARGV[5])
  else
    rcall("HSET", KEYS[2], "state", ARGV[4], "released_at", now, "error", ARGV[3])
    rcall("ZREM", KEYS[3], ARGV[5])
  end
end
return released
