--[[
  move_to_finished_batch: several move_to_finished calls in one (issue 12's group commit, for
  any job a processor completes or fails without a step of its own). Each job's part is exactly
  move_to_finished.lua's KEYS/ARGV (that header is the contract), run in the order given, so
  Node sees what the same calls one after another would leave. Shared within the call: the
  queue's meta (read once), the events trim and the delayed promotion (at the first finish),
  the marker (written once, at the end). All keys are the queue's (one slot on a cluster).

  ARGV[1] n, the number of jobs
  ARGV[2] keys per job (14)        ARGV[3] arguments per job (17 for a completion)
  KEYS[(i-1)*k+1 .. i*k]           job i's move_to_finished KEYS
  ARGV[3+(i-1)*a+1 .. 3+i*a]       job i's move_to_finished ARGV

  Returns one move_to_finished reply per job, in order.
]]
local n, nk, na = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if n == nil or nk == nil or na == nil or #KEYS ~= n * nk or #ARGV ~= 3 + n * na then
  return redis.error_reply("move_to_finished_batch: layout does not match its counts")
end
local batch = {}
local out = {}
for i = 0, n - 1 do
  local K = {unpack(KEYS, i * nk + 1, (i + 1) * nk)}
  local A = {unpack(ARGV, 4 + i * na, 3 + (i + 1) * na)}
  local q, f, w = finishedArgs(18, K, A)
  q.batch = batch
  local code = moveToFinished(q, f)
  if code ~= 0 then
    out[i + 1] = code
  else
    out[i + 1] = fetchNextOrDrain(q, f.now, w) or 0
  end
end
if batch.marker then rcall("ZADD", batch.marker, "0", "0") end
return out
