--[[
  window_sweep: take one overdue open attempt for the orphan sweep. If the attempt is still
  open (claimed, ambiguous, or retry) and its index time has passed, re-fence its claim (its
  lease is refreshed, so no legacy retry can claim and send while it is unresolved; an adopted
  `retry` with no claim is left to window_claim, which resolves it before any send), push its
  time on, and hand back what resolving it needs. Atomic, so
  replicas sweeping together take an orphan once.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index (global: absent = the caller took the run from it with
          window_index.lua "take" before, and drops it after a {} reply with "drop")

  ARGV[1] runId
  ARGV[2] claim lease (ms)
  ARGV[3] hold (ms)
  ARGV[4] "1" = take it even if not due (`ringback drain`)

  Returns {} (not overdue, or settled and dropped from the index), or
          {generation, token, to, from, body, urgent, tz, ask} (urgent "1" or "", tz "" = the
          deployment's, ask "" = none: what the send decision needs, as window_claim.lua keeps
          them on the record)
]]
local now, lease, hold = redisNowMs(), tonumber(ARGV[2]), tonumber(ARGV[3])
local index = KEYS[3]
if index then
  local due = tonumber(rcall("ZSCORE", index, ARGV[1]))
  if not due or (due > now and ARGV[4] ~= "1") then return {} end
end
local rec = rcall("HMGET", KEYS[2], "state", "token", "to", "from", "body", "urgent", "tz", "ask")
local state = rec[1]
if state ~= "claimed" and state ~= "ambiguous" and state ~= "retry" then
  if index then rcall("ZREM", index, ARGV[1]) end
  return {}
end
local v = rcall("GET", KEYS[1])
if v and (v == "sent" or string.sub(v, 1, 5) == "sent:") then
  if index then rcall("ZREM", index, ARGV[1]) end
  return {}
end
if (v and v == "pending:" .. rec[2]) or (not v and state ~= "retry") then
  rcall("SET", KEYS[1], "pending:" .. rec[2], "PX", lease)
end
local generation = rcall("HINCRBY", KEYS[2], "sweeps", 1)
if index then rcall("ZADD", index, now + math.floor(hold / 2), ARGV[1]) end
return {tostring(generation), rec[2] or "", rec[3] or "", rec[4] or "", rec[5] or "", rec[6] or "",
  rec[7] or "", rec[8] or ""}
