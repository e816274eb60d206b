--[[
  finish_sent: the single-Redis SMS finish: the sent marker, the job's completion, the
  next job's fetch and that job's claim, in one call: one Redis round trip per SMS job.

  1. The sent marker (window_mark_sent.lua's step), when ARGV[18] = "1": written first and
     whatever the job's lock says, because the message WAS sent.
  2. The completion (move_to_finished.lua's step, KEYS[1..14] and ARGV[1..17] as its header
     says): Node sees exactly what move_to_finished leaves; the lock check decides the job part
     only.
  3. Fetch next (as move_to_finished), and for the fetched job, the claim of its run
     (window_claim.lua's step), when ARGV[25] (the claim key template) is not "". The run's keys
     come from the job's data, so they are not declared: standalone Redis only (a Cluster keeps
     the separate calls). The claim is skipped, and the worker's processor claims as usual, for
     any job the processor would not run as it stands (and any job inside a lost-writes
     window, whose claim looks first: window.lua's redisLost): a deferred failure, a scheduler's job,
     a job started before (the started limit), options that are not an object, or data that
     is not a plain callback request. The check is a strict subset of `CallbackRequest::parse`
     (printable ASCII without escapes, flat, strings only): a job it leaves out is claimed by
     the processor as usual, so the subset costs speed, never correctness.

  KEYS[1..14] as move_to_finished.lua
  KEYS[15] claim key (this run)            KEYS[19] callback record
  KEYS[16] attempt record                  KEYS[20] its history
  KEYS[17] open-attempts index             KEYS[21] the reconcile set
  KEYS[18] message link (the MessageSid's)  KEYS[22] recent-runs index (the next run's claim)

  ARGV[1..17] as move_to_finished.lua (ARGV[5] = "completed")
  ARGV[18] "1" write the sent marker, "0" not (the run was found sent: nothing to mark)
  ARGV[19] attempt token     ARGV[22] runId
  ARGV[20] MessageSid        ARGV[23] the status Twilio answered
  ARGV[21] sent TTL (ms)     ARGV[24] poll the message after (ms)
  The next job's claim (window_claim.lua's ARGV where named):
  ARGV[25] claim key template, "\1" where the runId goes ("" = claim nothing)
  ARGV[26] attempt record template    ARGV[27] callback record template
  ARGV[28] new attempt token          ARGV[29] worker id
  ARGV[30] pending TTL (ms)           ARGV[31] hold (ms)
  ARGV[32] claim lease (ms)           ARGV[33] recent-runs cap (members)
  ARGV[34] how long the call's answer is kept for a re-send (ms)
  ARGV[35] the callback job names, each between newlines ("\nagent-callback\n"): a fetched job
           of another name is not claimed (the processor leaves it for its own worker)
  ARGV[36..] move_to_finished's fields (its ARGV[18..])
  KEYS[23] where it is kept: ringback:finished:<claim prefix><call id>, the call id the same on
           every re-send of the call

  A re-executed call (its reply was lost and the worker sent it again) answers from KEYS[23]
  what the first execution answered, and writes nothing. The record lives as long as the worker
  may send the call again (its lock duration, plus a margin): a re-send that found it gone would
  take the finished job's lock for lost and leave the job the first execution fetched to stall
  recovery. What the answer prepared is bounded apart: a claim older than its freshness bound
  (pending TTL - provider timeout - safety margin) must not start a send, so the worker gives
  back what a later answer prepared (the fetched job runs, claiming as usual).

  Returns {finish, mark, claim}:
    finish  move_to_finished's answer (0, a negative code, or the next job's 4-tuple)
    mark    window_mark_sent's answer (0 within the window, 1 overrun), false when not asked
    claim   window_claim's reply for the fetched job's run followed by that runId, or false
            (nothing fetched, or the claim was left to the processor)
]]
return finishSent(KEYS, ARGV, redisNowMs(), nil)
