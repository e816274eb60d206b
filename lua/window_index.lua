--[[
  window_index: one step on the open-attempts index alone (one key: one Redis Cluster slot), for
  the cluster layout where the per-run scripts cannot declare the index (window.rs, PerSlot).

  "take": the orphan sweep takes a run from the index if it is due (or ARGV[4] = "1": any time,
  `ringback drain`), pushing its time on by ARGV[3] ms, atomically, so replicas sweeping together
  take it once (what window_sweep.lua's own due check does on a single Redis).
  "drop": remove the run only if its time is still ARGV[3] (what "take" set): a newer claim
  that wrote the index since is left alone.

  KEYS[1] open-attempts index (ZSET runId -> when the orphan sweep must look at the attempt)

  ARGV[1] "take" | "drop"
  ARGV[2] runId
  ARGV[3] take: push (ms); drop: the time "take" set
  ARGV[4] take: "1" = even if not due

  Returns take: the new time (ms), or false (nil) when not due or not indexed;
          drop: 1 removed, 0 left alone
]]
local index, op, runId = KEYS[1], ARGV[1], ARGV[2]
local at = rcall("ZSCORE", index, runId)
if op == "take" then
  local now = redisNowMs()
  if not at or (tonumber(at) > now and ARGV[4] ~= "1") then return false end
  local nextAt = now + tonumber(ARGV[3])
  rcall("ZADD", index, nextAt, runId)
  return nextAt
end
if at and tonumber(at) == tonumber(ARGV[3]) then
  rcall("ZREM", index, runId)
  return 1
end
return 0
