--[[
  move_to_finished_batch: several move_to_finished calls in one (a group commit, for
  any job a processor completes or fails without a step of its own). Each job's part is exactly
  move_to_finished.lua's KEYS/ARGV (that header is the contract), run in the order given, so
  Node sees what the same calls one after another would leave. Shared within the call: the
  queue's meta (read once), the events trim and the delayed promotion (at the first finish),
  the marker (written once, at the end). All keys are the queue's (one slot on a cluster).

  The layout is the group commit's (batchParts in include/finish.lua): ARGV[1..3] the number of
  jobs, keys per job (14), arguments per job (17 for a completion); the first job's KEYS/ARGV in
  full, then each further job's as what differs from the job before it.

  Returns one move_to_finished reply per job, in order.
]]
local batch = {}
local out = {}
local ok, err = batchParts(function(i, K, A)
  local q, f, w = finishedArgs(18, K, A)
  q.batch = batch
  local code = moveToFinished(q, f)
  if code ~= 0 then
    out[i] = code
  else
    out[i] = fetchNextOrDrain(q, f.now, w) or 0
  end
end)
if not ok then return redis.error_reply("move_to_finished_batch: " .. err) end
if batch.marker then rcall("ZADD", batch.marker, "0", "0") end
return out
