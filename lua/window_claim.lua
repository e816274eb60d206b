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
  KEYS[4] open-attempts index (ZSET runId -> when the orphan sweep must look at the attempt)
  KEYS[5] recent-runs index (ZSET runId -> when its latest fresh attempt was claimed, ms; capped
          at ARGV[13] members, oldest dropped): the operators' console lists runs from it

  ARGV[1] new attempt token        ARGV[7] record TTL (ms), the sent TTL
  ARGV[2] job id                   ARGV[8] to
  ARGV[3] worker id                ARGV[9] from ("" = the configured sender)
  ARGV[4] supersede: the token of  ARGV[10] body
          an attempt the caller    ARGV[11] runId
          resolved as never sent   ARGV[12] claim lease (ms)
          ("" = none)             ARGV[13] recent-runs cap (members)
  ARGV[5] pending TTL (ms)
  ARGV[6] hold (ms): how long a resolver may go without touching the attempt

  Every reply ends with Redis's now (ms), so callers can schedule on Redis's clock.
  Returns
    {"sent", sid, now}                 already sent (sid "" when the legacy worker sent it)
    {"busy", ms, now}                  a live ringback attempt holds the claim: come back in ms
    {"claimed", token, now}            ours: send now
    {"resolve", token, since, to, from, body, receiptSid, escalated, now}
                                       a previous attempt may have sent: the claim is held with
                                       `token`; find evidence before sending again
]]
local claimKey, attemptKey, index = KEYS[1], KEYS[2], KEYS[4]
local now = redisNowMs()
local pendingTtl, hold, lease = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[12])
local supersede, runId = ARGV[4], ARGV[11]
local v = rcall("GET", claimKey)
local rec = {}
local flat = rcall("HGETALL", attemptKey)
for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
local receipt = rcall("HGET", KEYS[3], "sid") or ""

local function sent(sid)
  rcall("ZREM", index, runId)
  return {"sent", sid, now}
end

-- Hold the claim under `token` and hand the resolution to this caller.
local function resolveWith(token, since)
  local to, from, body = rec["to"] or ARGV[8], rec["from"] or ARGV[9], rec["body"] or ARGV[10]
  rcall("SET", claimKey, "pending:" .. token, "PX", lease)
  rcall("HSET", attemptKey, "token", token, "job", ARGV[2], "worker", ARGV[3], "state", "ambiguous",
    "since", since, "to", to, "from", from, "body", body, "touched", now)
  rcall("PEXPIRE", attemptKey, ARGV[7])
  -- a resolver touches the attempt every poll; half the hold without a touch means it is gone
  rcall("ZADD", index, now + math.floor(hold / 2), runId)
  return {"resolve", token, since, to, from, body, receipt, rec["escalated"] or "", now}
end

-- A new attempt: the claim (a lease) and the record, in one step.
local function fresh(token)
  rcall("SET", claimKey, "pending:" .. token, "PX", lease)
  rcall("DEL", attemptKey)
  rcall("HSET", attemptKey, "token", token, "job", ARGV[2], "worker", ARGV[3], "state", "claimed",
    "claimed_at", now, "since", now, "to", ARGV[8], "from", ARGV[9], "body", ARGV[10])
  rcall("PEXPIRE", attemptKey, ARGV[7])
  -- dead at claimed_at + pending TTL if still claimed: the sweep looks then
  rcall("ZADD", index, now + pendingTtl, runId)
  -- the console's newest-first list; ZCARD is O(1), the trim runs once per claim past the cap
  rcall("ZADD", KEYS[5], now, runId)
  local over = rcall("ZCARD", KEYS[5]) - tonumber(ARGV[13])
  if over > 0 then rcall("ZREMRANGEBYRANK", KEYS[5], 0, over - 1) end
  return {"claimed", token, now}
end

local function since() return rec["since"] or rec["claimed_at"] or now end
-- `retry` counts as open here: its lease ended, so someone else may have sent since (model: F1)
local open = rec["state"] == "claimed" or rec["state"] == "ambiguous" or rec["state"] == "retry"

if v then
  if v == "sent" or string.sub(v, 1, 5) == "sent:" then
    local sid = string.sub(v, 6)
    if sid == "" then sid = rec["sid"] or receipt end
    return sent(sid)
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
  if rec["token"] ~= token then
    -- A ringback claim without its record (expired, or removed by hand): unknown, so resolve.
    rec = {}
    rcall("DEL", attemptKey)
    return resolveWith(token, now)
  end
  if supersede ~= "" and supersede == token and rec["state"] == "ambiguous" then
    -- The caller resolved this attempt as never sent: replace it atomically, so the claim never
    -- disappears between the old attempt and the new one.
    return fresh(ARGV[1])
  end
  if rec["state"] == "claimed" then
    local deadAt = (tonumber(rec["claimed_at"]) or now) + pendingTtl
    if now < deadAt then return {"busy", deadAt - now, now} end
    return resolveWith(token, since())
  end
  if rec["state"] == "ambiguous" then return resolveWith(token, since()) end
  if rec["state"] == "sent" then
    rcall("SET", claimKey, "sent:" .. (rec["sid"] or ""), "PX", ARGV[7])
    return sent(rec["sid"] or "")
  end
  -- retry (or an older record's released / send-failed) under our own claim: Twilio took nothing
  return fresh(ARGV[1])
end

if open then
  -- the lease ran out under an attempt that never finished its window: resolve before any send
  local token = rec["token"]
  if token == nil or token == "" then token = ARGV[1] end
  return resolveWith(token, since())
end
if rec["state"] == "sent" and rec["sid"] then
  rcall("SET", claimKey, "sent:" .. rec["sid"], "PX", ARGV[7])
  return sent(rec["sid"])
end
if receipt ~= "" then
  -- a status callback already proved a message for this run
  rcall("SET", claimKey, "sent:" .. receipt, "PX", ARGV[7])
  return sent(receipt)
end
return fresh(ARGV[1])
