--[[
  window_mark_sent: Twilio accepted the message; turn the claim into the long-lived sent marker.

  Written whatever the claim holds now: the message was sent, so the marker must say so. If the
  claim is no longer our pending value (it expired while the call was in flight, or another
  attempt took it), that is a window overrun: reported so metrics can count it.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index
  KEYS[4] message link (ringback:message:<MessageSid> -> runId), so a lookup never takes
          another run's message for this one
  KEYS[5] callback record, KEYS[6] its history, KEYS[7] the reconcile set: the record starts
          with Twilio's answer (source "send"), in this same call (see receipt_apply.lua)

  ARGV[1] attempt token
  ARGV[2] MessageSid
  ARGV[3] now (ms)
  ARGV[4] sent TTL (ms)
  ARGV[5] runId
  ARGV[6] the status Twilio answered (queued / accepted)
  ARGV[7] when to poll the message if no terminal receipt came (ms)

  Returns 0 marked within the window, 1 marked after a window overrun
]]
local overrun = 0
if rcall("GET", KEYS[1]) ~= "pending:" .. ARGV[1] then overrun = 1 end
rcall("SET", KEYS[1], "sent:" .. ARGV[2], "PX", ARGV[4])
if rcall("HGET", KEYS[2], "token") == ARGV[1] or rcall("EXISTS", KEYS[2]) == 0 then
  rcall("HSET", KEYS[2], "token", ARGV[1], "state", "sent", "sid", ARGV[2], "sent_at", ARGV[3])
end
rcall("PEXPIRE", KEYS[2], ARGV[4])
rcall("ZREM", KEYS[3], ARGV[5])
applyReceipt({rec = KEYS[5], hist = KEYS[6], seen = "", link = KEYS[4], reconcile = KEYS[7],
  runId = ARGV[5], sid = ARGV[2], status = ARGV[6], code = "", dlr = "", now = ARGV[3],
  source = "send", repeatTtl = "0", recordTtl = ARGV[4], nextPoll = ARGV[7]})
return overrun
