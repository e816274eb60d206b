--[[
  window_claim: decide, atomically, what an attempt to send callback <runId> may do.

  The claim key is shared with the legacy Node worker, which writes "pending" (SET NX EX 600)
  and "sent" (SET XX EX 86400) and only tests existence. ringback writes "pending:<token>" and
  "sent:<MessageSid>", and keeps a durable attempt record (a hash) that outlives the claim, so
  an attempt that died inside the window is noticed (by the record, even after its claim
  expired; by its age, while the claim still exists).

  An attempt is alive for the pending TTL after it claimed: a live call ends within the provider
  timeout, which the pending TTL exceeds (checked at start). Past that, a claimed attempt that
  neither marked sent nor released is dead, and any job for the run resolves it; so does any
  job that finds an ambiguous send or a legacy "pending". Resolving holds the claim (so no
  legacy retry can claim and send meanwhile) and looks for evidence before sending again.

  KEYS[1] claim key       (<claim prefix><runId>)
  KEYS[2] attempt record  (ringback:attempt:{<claim key>})
  KEYS[3] callback record (ringback:callback:{<claim key>}; field `sid` = a receipt's MessageSid)
  KEYS[4] open-attempts index (ZSET runId -> deadline ms; an attempt still open at its deadline
          may have no live job: the orphan sweep re-fences its claim and re-enqueues it)

  ARGV[1] new attempt token        ARGV[7] record TTL (ms), the sent TTL
  ARGV[2] job id                   ARGV[8] to
  ARGV[3] worker id                ARGV[9] from ("" = the configured sender)
  ARGV[4] now (ms)                 ARGV[10] body
  ARGV[5] pending TTL (ms)         ARGV[11] runId
  ARGV[6] hold (ms): claim TTL while resolving an unknown send

  Returns
    {"sent", sid}                      already sent (sid "" when the legacy worker sent it)
    {"busy", ms}                       a live ringback attempt holds the claim: come back in ms
    {"claimed", token}                 ours: send now
    {"resolve", token, since, to, from, body, receiptSid}
                                       a previous attempt may have sent: the claim is held with
                                       `token`; find evidence before sending again
]]
local claimKey, attemptKey, index = KEYS[1], KEYS[2], KEYS[4]
local now = tonumber(ARGV[4])
local pendingTtl, hold = tonumber(ARGV[5]), tonumber(ARGV[6])
local runId = ARGV[11]
local v = rcall("GET", claimKey)
local rec = {}
local flat = rcall("HGETALL", attemptKey)
for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
local receipt = rcall("HGET", KEYS[3], "sid") or ""

-- Hold the claim under `token` and hand the resolution to this job.
local function resolveWith(token, since)
  local to, from, body = rec["to"] or ARGV[8], rec["from"] or ARGV[9], rec["body"] or ARGV[10]
  rcall("SET", claimKey, "pending:" .. token, "PX", hold)
  rcall("HSET", attemptKey, "token", token, "job", ARGV[2], "worker", ARGV[3], "state", "ambiguous",
    "since", since, "to", to, "from", from, "body", body, "touched", now)
  rcall("PEXPIRE", attemptKey, ARGV[7])
  -- a resolver touches the attempt every poll; half the hold without a touch means it is gone
  rcall("ZADD", index, now + math.floor(hold / 2), runId)
  return {"resolve", token, since, to, from, body, receipt}
end

local function isDead()
  return rec["state"] == "claimed" and now >= (tonumber(rec["claimed_at"]) or 0) + pendingTtl
end

if v then
  if v == "sent" or string.sub(v, 1, 5) == "sent:" then
    local sid = string.sub(v, 6)
    if sid == "" then sid = rec["sid"] or receipt end
    rcall("ZREM", index, runId)
    return {"sent", sid}
  end
  if string.sub(v, 1, 8) ~= "pending:" then
    -- The legacy worker (or an unknown writer) holds a plain "pending": inside its window, or
    -- dead there. Take the claim over: a live legacy attempt still ends with SET XX "sent"
    -- (which we read), and no legacy retry can claim and send meanwhile.
    rec = {}
    rcall("DEL", attemptKey)
    return resolveWith(ARGV[1], now)
  end
  local token = string.sub(v, 9)
  if rec["token"] == token and (rec["state"] == "ambiguous" or isDead()) then
    return resolveWith(token, rec["since"] or rec["claimed_at"] or now)
  end
  local wait = rcall("PTTL", claimKey)
  if rec["token"] == token and rec["state"] == "claimed" then
    wait = (tonumber(rec["claimed_at"]) or now) + pendingTtl - now
  end
  return {"busy", math.max(wait, 0)}
end

if rec["state"] == "claimed" or rec["state"] == "ambiguous" then
  -- the claim expired under an attempt that never finished its window
  local token = rec["token"]
  if token == nil or token == "" then token = ARGV[1] end
  return resolveWith(token, rec["since"] or rec["claimed_at"] or now)
end

rcall("SET", claimKey, "pending:" .. ARGV[1], "PX", pendingTtl)
rcall("DEL", attemptKey)
rcall("HSET", attemptKey, "token", ARGV[1], "job", ARGV[2], "worker", ARGV[3], "state", "claimed",
  "claimed_at", now, "since", now, "to", ARGV[8], "from", ARGV[9], "body", ARGV[10])
rcall("PEXPIRE", attemptKey, ARGV[7])
-- swept at half the pending TTL: re-fenced before the claim can expire under a dead attempt
rcall("ZADD", index, now + math.floor(pendingTtl / 2), runId)
return {"claimed", ARGV[1]}
