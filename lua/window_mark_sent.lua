--[[
  window_mark_sent: Twilio accepted the message (or a resolver found it); turn the claim into the
  long-lived sent marker.

  Written whatever the claim holds now: the message was sent, so the marker must say so. If the
  claim is no longer our pending value (another attempt took it), that is a window overrun:
  reported so metrics can count it. The same call executed again (its reply was lost and it was
  re-sent: the claim already holds this MessageSid and the attempt record this token and sid) is
  no overrun: it answers 0 and writes nothing. A resolver's find (ARGV[7] = "found") is refused when the
  message is already linked to another run: a lookup never takes another run's message (without
  the link key the caller checks the link before this call).

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index (global: the run leaves it)
  KEYS[4] message link (global: ringback:message:<MessageSid> -> runId)
  KEYS[5] callback record: it starts with Twilio's answer (source "send", see
          receipt_apply.lua), in this same call
  KEYS[6] its history
  KEYS[7] the reconcile schedule (global: the message is looked up at now + ARGV[6])
  Or, on a Redis Cluster, 4 keys, all in the run's slot:
  KEYS[1..4] as the Cluster layout: claim key, attempt record, callback record, history; the
          caller writes the global ones in separate calls (window.rs says in which order, and
          why a cut between them loses nothing).

  ARGV[1] attempt token
  ARGV[2] MessageSid
  ARGV[3] sent TTL (ms)
  ARGV[4] runId
  ARGV[5] the status Twilio answered (queued / accepted)
  ARGV[6] look the message up this long after now (ms): the reconciler drops it then if a
          receipt already ended it
  ARGV[7] "sent" (Twilio answered this attempt) | "found" (a lookup found it)

  Returns 0 marked within the window, 1 marked after a window overrun, 2 refused: the message
  belongs to another run
]]
if #KEYS == 4 then
  return markSentRun({KEYS[1], KEYS[2], nil, nil, KEYS[3], KEYS[4], nil}, ARGV)
end
return markSentRun(KEYS, ARGV)
