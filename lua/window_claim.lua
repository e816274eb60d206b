--[[
  window_claim: decide, atomically, what an attempt to send callback <runId> may do.

  The claim key is shared with the legacy Node worker, which writes "pending" (SET NX EX 600)
  and "sent" (SET XX EX 86400) and only tests existence. ringback writes "pending:<token>" and
  "sent:<MessageSid>", and keeps a durable attempt record (a hash) that outlives the claim.

  The claim key is a *lease* (ARGV[12], default 600 s), refreshed by every ringback step that
  touches an open attempt: it exists for as long as an attempt may be unresolved, so a legacy
  `SET NX` can never succeed while ringback may have sent. Liveness comes from the record, on
  Redis's clock: a `claimed` attempt is alive until claimed_at + pending TTL (the pending TTL
  exceeds the provider timeout, checked at start); past that it is dead, and any caller
  resolves it. An `ambiguous` attempt is resolved by whoever comes (resolvers only look for
  evidence; a send needs the supersede below). Resolving holds the claim and looks for evidence
  before sending again.

  KEYS[1] claim key       (<claim prefix><runId>)
  KEYS[2] attempt record  (ringback:attempt:{<claim key>})
  KEYS[3] callback record (ringback:callback:{<claim key>}; field `sid` = a receipt's MessageSid)
  KEYS[4] the Redis identity: the run_id of the Redis that acknowledged ringback's writes, and
          when a change was noticed (ringback:redis-identity on one Redis; on a Cluster the
          claim key's slot's own, ringback:redis-identity:{<tag of the slot>}, so a shard's
          failover is seen by the claims it serves): inside ARGV[17] ms of a change, a claim
          that would open a fresh attempt answers "resolve" (origin "lost") instead: a Redis
          that lost its last writes may have forgotten this run's send
  Global keys (other slots; absent = the caller writes them in separate calls, see window.rs):
  KEYS[5] open-attempts index (ZSET runId -> when the orphan sweep must look at the attempt)
  KEYS[6] recent-runs index (ZSET runId -> when its latest fresh attempt was claimed, ms; capped
          at about ARGV[13] members, oldest dropped: trimmed on about one new member in 16, by
          ARGV[1]'s last hex digit, so it may briefly hold a few dozen more): the operators'
          console lists runs from it

  ARGV[1] new attempt token        ARGV[7] record TTL (ms), the sent TTL
  ARGV[2] job id                   ARGV[8] to
  ARGV[3] worker id                ARGV[9] from ("" = the configured sender)
  ARGV[4] supersede: the token of  ARGV[10] body
          an attempt the caller    ARGV[11] runId
          resolved as never sent   ARGV[12] claim lease (ms)
          ("" = none)             ARGV[13] recent-runs cap (members)
                                  ARGV[14] (cluster layout only) when the caller's index
                                           intent comes due (ms): from then on a sweep may
                                           take and drop the entry, so the claim opens no
                                           attempt and answers busy (1 ms): come back
                                  ARGV[15] "1" = urgent (sent inside quiet hours), else ""
                                  ARGV[16] the callback's time zone ("" = the deployment's)
                                           ARGV[15..16] are kept on the record (fields urgent,
                                           tz) for the paths that rebuild the request from it
                                  ARGV[17] the lost-writes window (ms; KEYS[4])
                                  ARGV[18] the callback's question and ladder (job data
                                           fields as JSON, "" = none asked): kept on the
                                           record (field ask) as ARGV[15..16] are
  ARGV[5] pending TTL (ms)
  ARGV[6] hold (ms): how long a resolver may go without touching the attempt

  Every reply ends with Redis's now (ms), so callers can schedule on Redis's clock.
  Returns
    {"sent", sid, now}                 already sent (sid "" when the legacy worker sent it)
    {"busy", ms, now}                  a live ringback attempt holds the claim: come back in ms
    {"claimed", token, now}            ours: send now
    {"resolve", token, since, to, from, body, receiptSid, escalated, origin, now}
                                       a previous attempt may have sent: the claim is held with
                                       `token`; find evidence before sending again. origin "own":
                                       `since` is when ringback's attempt claimed; "taken": the
                                       claim was taken over from a writer with no record (the
                                       legacy worker), whose send may be older than `since`;
                                       "lost": Redis lost writes at `since` (KEYS[4])
]]
return claimRun(KEYS, ARGV)
