--[[
  window_release: give the claim up because Twilio did not take the message (a permanent
  error, a rate limit), or because the reconcile window passed with no evidence of a send.
  Compare-and-delete: only our own pending claim is removed.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index

  ARGV[1] attempt token
  ARGV[2] now (ms)
  ARGV[3] reason (kept on the record for escalation and `ringback status`)
  ARGV[4] record state to write: "released" | "send-failed"
  ARGV[5] runId

  Returns 1 released, 0 the claim was not ours (left alone)
]]
local released = 0
if rcall("GET", KEYS[1]) == "pending:" .. ARGV[1] then
  rcall("DEL", KEYS[1])
  released = 1
end
if rcall("HGET", KEYS[2], "token") == ARGV[1] then
  rcall("HSET", KEYS[2], "state", ARGV[4], "released_at", ARGV[2], "error", ARGV[3])
  rcall("ZREM", KEYS[3], ARGV[5])
end
return released
