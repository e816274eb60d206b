--[[
  window_claim: decide, atomically, what an attempt to send callback <runId> may do.

  The claim key is shared with the legacy Node worker, which writes "pending" (SET NX EX 600)
  and "sent" (SET XX EX 86400) and only tests existence. ringback writes "pending:<token>" and
  "sent:<MessageSid>", and keeps a durable attempt record (a hash) that outlives the claim, so
  an attempt that died inside the window is noticed after its claim expired.

  KEYS[1] claim key       (<claim prefix><runId>)
  KEYS[2] attempt record  (ringback:attempt:{<claim key>})
  KEYS[3] callback record (ringback:callback:{<claim key>}; field `sid` = a receipt's MessageSid)
  KEYS[4] open-attempts index (ZSET runId -> deadline ms; an attempt still open after its
          deadline has no live job, and the orphan sweep re-enqueues it)

  ARGV[1] new attempt token        ARGV[6] hold (ms): claim TTL while resolving an unknown send
  ARGV[2] job id                   ARGV[7] record TTL (ms), the sent TTL
  ARGV[3] worker id                ARGV[8] to
  ARGV[4] now (ms)                 ARGV[9] from ("" = the configured sender)
  ARGV[5] pending TTL (ms)         ARGV[10] body
  ARGV[11] runId

  Returns
    {"sent", sid}                      already sent (sid "" when the legacy worker sent it)
    {"busy", pttl}                     another ringback attempt holds the claim: come back after pttl ms
    {"claimed", token}                 ours: send now
    {"resolve", token, since, to, from, body, receiptSid}
                                       a previous attempt may have sent (it died inside the
                                       window, its send was ambiguous, or the legacy worker is
                                       or was inside its window): the claim is held with
                                       `token`; find evidence before sending again
]]
local claimKey, attemptKey = KEYS[1], KEYS[2]
local now = ARGV[4]
local runId = ARGV[11]
local holdDeadline = tonumber(now) + tonumber(ARGV[6]) + tonumber(ARGV[5])
local v = rcall("GET", claimKey)
local rec = {}
local flat = rcall("HGETALL", attemptKey)
for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
local receipt = rcall("HGET", KEYS[3], "sid") or ""

local function resolveWith(token, since)
  rcall("ZADD", KEYS[4], holdDeadline, runId)
  rcall("HSET", attemptKey, "token", token, "job", ARGV[2], "worker", ARGV[3], "state", "ambiguous",
    "since", since, "to", rec["to"] or ARGV[8], "from", rec["from"] or ARGV[9], "body", rec["body"] or ARGV[10])
  rcall("PEXPIRE", attemptKey, ARGV[7])
  return {"resolve", token, since, rec["to"] or ARGV[8], rec["from"] or ARGV[9], rec["body"] or ARGV[10], receipt}
end

if v then
  if v == "sent" or string.sub(v, 1, 5) == "sent:" then
    local sid = string.sub(v, 6)
    if sid == "" then sid = rec["sid"] or receipt end
    rcall("ZREM", KEYS[4], runId)
    return {"sent", sid}
  end
  local token = nil
  if string.sub(v, 1, 8) == "pending:" then token = string.sub(v, 9) end
  if token and rec["token"] == token and rec["state"] == "ambiguous" and rec["job"] == ARGV[2] then
    -- our own unresolved send: keep holding the claim while we look for evidence
    if rcall("PTTL", claimKey) < tonumber(ARGV[6]) then rcall("PEXPIRE", claimKey, ARGV[6]) end
    rcall("ZADD", KEYS[4], holdDeadline, runId)
    return {"resolve", token, rec["since"], rec["to"], rec["from"], rec["body"], receipt}
  end
  if not token then
    -- The legacy worker (or an unknown writer) holds a plain "pending": it is inside its window,
    -- or died there. Take the claim over to resolve it: a live legacy attempt still finishes
    -- with SET XX "sent" (which we read), and no legacy retry can claim and send meanwhile.
    rcall("SET", claimKey, "pending:" .. ARGV[1], "PX", ARGV[6])
    rec = {}
    rcall("DEL", attemptKey)
    return resolveWith(ARGV[1], now)
  end
  return {"busy", rcall("PTTL", claimKey)}
end

local state = rec["state"]
if state == "claimed" or state == "ambiguous" then
  local token = rec["token"]
  if token == nil or token == "" then token = ARGV[1] end
  local since = rec["since"] or rec["claimed_at"] or now
  rcall("SET", claimKey, "pending:" .. token, "PX", ARGV[6])
  return resolveWith(token, since)
end

rcall("SET", claimKey, "pending:" .. ARGV[1], "PX", ARGV[5])
rcall("DEL", attemptKey)
rcall("HSET", attemptKey, "token", ARGV[1], "job", ARGV[2], "worker", ARGV[3], "state", "claimed",
  "claimed_at", now, "since", now, "to", ARGV[8], "from", ARGV[9], "body", ARGV[10])
rcall("PEXPIRE", attemptKey, ARGV[7])
rcall("ZADD", KEYS[4], tonumber(now) + 2 * tonumber(ARGV[5]), runId)
return {"claimed", ARGV[1]}
