--[[
  finish_sent_batch: several finish_sent calls in one (issue 12's group commit). When SMS jobs
  finish while an earlier finishing call is still on its way, the worker sends their finishes
  together: each job's part is exactly finish_sent.lua's KEYS/ARGV (that header is the contract),
  run in the order given, so Node sees what the same finish_sent calls one after another would
  leave. Shared within the call: Redis's time (one TIME), the queue's meta (read once), the
  events trim and the delayed promotion (at the first finish), the marker (written once, at the
  end). One Redis only, as finish_sent.

  ARGV[1] n, the number of jobs
  ARGV[2] keys per job (22)        ARGV[3] arguments per job (33)
  KEYS[(i-1)*k+1 .. i*k]           job i's finish_sent KEYS
  ARGV[3+(i-1)*a+1 .. 3+i*a]       job i's finish_sent ARGV

  Returns one finish_sent reply per job, in order: {finish, mark, claim}.
]]
local n, nk, na = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if n == nil or nk == nil or na == nil or #KEYS ~= n * nk or #ARGV ~= 3 + n * na then
  return redis.error_reply("finish_sent_batch: layout does not match its counts")
end
local now = redisNowMs()
local batch = {}
local out = {}
for i = 0, n - 1 do
  local K = {unpack(KEYS, i * nk + 1, (i + 1) * nk)}
  local A = {unpack(ARGV, 4 + i * na, 3 + (i + 1) * na)}
  out[i + 1] = finishSent(K, A, now, batch)
end
if batch.marker then rcall("ZADD", batch.marker, "0", "0") end
return out
