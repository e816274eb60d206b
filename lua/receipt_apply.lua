--[[
  receipt_apply: apply one delivery status (a Twilio status callback, or a poll of the message)
  to the callback record of its run, atomically.

  Statuses are ranked: accepted/scheduled/queued 0 < sending 1 < sent 2 <
  delivered/undelivered/failed/canceled/partially_delivered 3 < read 4. A record never moves to a
  lower rank; arrival order never decides (messaging callbacks carry no event time). At equal
  rank a later RawDlrDoneDate (YYMMDDhhmm) wins; otherwise the first terminal status wins and a
  different one is kept in the history as a conflict. A status for another message of the same
  run (a second text) goes to the history only.

  One call, in the run's slot (Redis Cluster): the global keys (the MessageSid link, the reconcile
  schedule) are not touched here. The send path links its sid and schedules its poll when it marks
  the message sent (window_mark_sent.lua); a status for a sid the record did not know asks the
  caller to write the link (4th reply element); the reconciler drops a scheduled sid whose record
  is terminal when it comes due, so a terminal status needs no schedule write.

  Lifetimes (ARGV[9], the record TTL): the record from its first applied status (or from a
  repeat marker that started it), the history list from its first entry; a later status
  refreshes neither (one command each per callback; the claim, the attempt record and the link
  live theirs from the send alike). Repeat markers are fields of the record: no key of their own.

  KEYS[1] callback record   (ringback:callback:{<claim key>})
  KEYS[2] history list      (ringback:callback-history:{<claim key>})
  KEYS[3] ladder record     (ringback:ladder:{<claim key>}: only whether it exists is read)

  ARGV[1] runId           ARGV[6] now (ms)
  ARGV[2] MessageSid      ARGV[7] source: "webhook" | "poll" | "send"
  ARGV[3] status          ARGV[8] repeat id ("token:<idempotency token>" or "params:<hash of
  ARGV[4] error code ("")         the signed parameters>; "" = no repeat check), kept as the
  ARGV[5] RawDlrDoneDate ("")     record's field "seen:<repeat id>"
                          ARGV[9] record TTL (ms)
  ARGV[10] the attempt token the StatusCallback URL carried ("" = none): kept in the history,
           so a receipt names the attempt that sent

  Returns {outcome, status now, previous status, link, ladder}; outcome is one of
    "repeat" (seen before: nothing changed), "applied", "stale" (lower rank: history only),
    "same" (no change), "conflict" (a different terminal status: history only),
    "other" (another message of the run: history only), "unknown" (not a status we rank);
  link is "1" when the caller must write the MessageSid link (ringback:message:<sid> -> runId,
  record TTL): the record did not know this sid (its send was never marked, or another message);
  ladder is "1" when the run has an escalation ladder (a delivered receipt may acknowledge it: the
  caller's next call), "0" otherwise (a run without one costs no call more)
]]
local out = applyReceipt({rec = KEYS[1], hist = KEYS[2], seen = ARGV[8],
  runId = ARGV[1], sid = ARGV[2], status = ARGV[3], code = ARGV[4], dlr = ARGV[5], now = ARGV[6],
  source = ARGV[7], recordTtl = ARGV[9], attempt = ARGV[10]})
out[#out + 1] = tostring(rcall("EXISTS", KEYS[3]))
return out
