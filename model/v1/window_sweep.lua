--[[
  window_sweep: take one overdue open attempt for the orphan sweep. If the attempt is still
  open (claimed or ambiguous) and its deadline has passed, re-fence its claim (so no legacy
  retry can claim and send while it is unresolved), push its deadline on, and hand back what a
  re-enqueued callback job needs. Atomic, so replicas sweeping together take an orphan once.

  KEYS[1] claim key
  KEYS[2] attempt record
  KEYS[3] open-attempts index

  ARGV[1] runId
  ARGV[2] now (ms)
  ARGV[3] hold (ms)

  Returns {} (not overdue, or settled and dropped from the index), or
          {generation, token, to, from, body}
]]
local now, hold = tonumber(ARGV[2]), tonumber(ARGV[3])
local due = tonumber(rcall("ZSCORE", KEYS[3], ARGV[1]))
if not due or due > now then return {} end
local rec = rcall("HMGET", KEYS[2], "state", "token", "to", "from", "body")
if rec[1] ~= "claimed" and rec[1] ~= "ambiguous" then
  rcall("ZREM", KEYS[3], ARGV[1])
  return {}
end
local v = rcall("GET", KEYS[1])
if v and (v == "sent" or string.sub(v, 1, 5) == "sent:") then
  rcall("ZREM", KEYS[3], ARGV[1])
  return {}
end
if not v or v == "pending:" .. rec[2] then
  rcall("SET", KEYS[1], "pending:" .. rec[2], "PX", hold)
end
local generation = rcall("HINCRBY", KEYS[2], "sweeps", 1)
rcall("ZADD", KEYS[3], now + math.floor(hold / 2), ARGV[1])
return {tostring(generation), rec[2], rec[3] or "", rec[4] or "", rec[5] or ""}
