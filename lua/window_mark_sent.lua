--[[
  window_mark_sent: Twilio accepted the message (or a resolver found it); turn the claim into the
  long-lived sent marker.

  Written whatever the claim holds now: the message was sent, so the marker must say so. If the
  claim is no longer our pending value (another attempt took it), that is a window overrun:
  reported so metrics can count it. A resolver's find (ARGV[7] = "found") is refused when the
  message is already linked to another run: a lookup never takes another run's message.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index
  KEYS[4] message link (ringback:message:<MessageSid> -> runId)
  KEYS[5] callback record, KEYS[6] its history, KEYS[7] the reconcile set: the record starts
          with Twilio's answer (source "send"), in this same call (see receipt_apply.lua)

  ARGV[1] attempt token
  ARGV[2] MessageSid
  ARGV[3] sent TTL (ms)
  ARGV[4] runId
  ARGV[5] the status Twilio answered (queued / accepted)
  ARGV[6] poll the message this long after now if no terminal receipt came (ms)
  ARGV[7] "sent" (Twilio answered this attempt) | "found" (a lookup found it)

  Returns 0 marked within the window, 1 marked after a window overrun, 2 refused: the message
  belongs to another run
]]
return markSentRun(KEYS, ARGV)
