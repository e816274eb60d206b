--[[
  finish_sent_batch: several finish_sent calls in one (a group commit). When SMS jobs
  finish while an earlier finishing call is still on its way, the worker sends their finishes
  together: each job's part is exactly finish_sent.lua's KEYS/ARGV (that header is the contract),
  run in the order given, so Node sees what the same finish_sent calls one after another would
  leave. Shared within the call: Redis's time (one TIME), the queue's meta (read once), the
  events trim and the delayed promotion (at the first finish), the marker (written once, at the
  end). One Redis only, as finish_sent.

  The layout is the group commit's (batchParts in include/finish.lua): ARGV[1..3] the number of
  jobs, keys per job (23), arguments per job (35); the first job's KEYS/ARGV in full, then each
  further job's as what differs from the job before it.

  Returns one finish_sent reply per job, in order: {finish, mark, claim}.
]]
local now = redisNowMs()
local batch = {}
local out = {}
local ok, err = batchParts(function(i, K, A) out[i] = finishSent(K, A, now, batch) end)
if not ok then return redis.error_reply("finish_sent_batch: " .. err) end
if batch.marker then rcall("ZADD", batch.marker, "0", "0") end
return out
