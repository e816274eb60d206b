--[[
  ringback: the window's per-run steps as functions, prepended (after common.lua) to the scripts
  that name `[window]` in crates/store/src/scripts.rs. A script that is only one step calls one function
  with its KEYS and ARGV (window_claim.lua, window_mark_sent.lua, receipt_apply.lua); a script that
  fuses several steps in one call (the single-Redis finish) calls several, each with its own
  tables laid out exactly as that step's script header says: the headers stay the one contract.

  Nothing here reads KEYS or ARGV; needs common.lua (rcall, redisNowMs).
]]

-- SET … GET answers the old value in the same command (Redis 6.2+). Scripts can tell the
-- version from Redis 7.0 on (`redis.REDIS_VERSION_NUM`); older servers (BullMQ runs on 5.0, and
-- so does ringback) take a GET and a SET.
local SET_ANSWERS_OLD = (redis.REDIS_VERSION_NUM or 0) >= 0x070000

-- How far along a message is by its status: a receipt never moves a record back (file-level:
-- a batch builds the table once per call, not once per job).
local RECEIPT_RANKS = {accepted = 0, scheduled = 0, queued = 0, sending = 1, sent = 2,
  delivered = 3, undelivered = 3, failed = 3, canceled = 3, partially_delivered = 3, read = 4}

-- What HMGET answers for the six fields applyReceipt reads when the record is missing (read
-- only: one table for every call).
local NO_RECORD = {false, false, false, false, false, false}

-- One entry of a run's receipt history as JSON (applyReceipt's `r`, its time as a string, the
-- outcome). (File-level, as the window's other helpers: a function made inside a step is one
-- more closure for Lua's collector per job.)
local function receiptEntry(r, now, outcome)
  local code, dlr = r.code, r.dlr
  local entry = {status = r.status, sid = r.sid, at = tonumber(now), source = r.source,
    outcome = outcome}
  if code ~= "" then entry["error_code"] = code end
  if dlr ~= "" then entry["raw_dlr_done_date"] = dlr end
  if r.attempt and r.attempt ~= "" then entry["attempt"] = r.attempt end
  return cjson.encode(entry)
end

-- The send's own entry when it starts the record (applyReceipt's `inline`): "<at> <status>
-- <attempt>", not the entry's JSON. A hash keeps Redis's compact encoding (a listpack) only
-- while every field and value is at most `hash-max-listpack-value` bytes (64 by default); the
-- JSON entry (~150 bytes) turned every callback record into a hash table (~970 bytes, ~20
-- allocations, against ~350 bytes in one). The rest of the entry is the record's: its sid (the
-- send's: a record's sid never changes once set), source "send", outcome "applied"; readers
-- rebuild the entry (`receipts::history_of`). A send with an error code, a DLR date or a space
-- in its status or token (none of ours has one) keeps the JSON entry.
local function sendEntry(r, now)
  local status, attempt = r.status, r.attempt or ""
  if r.code ~= "" or r.dlr ~= "" or string.find(status, " ", 1, true)
      or string.find(attempt, " ", 1, true) then
    return receiptEntry(r, now, "applied")
  end
  return now .. " " .. status .. " " .. attempt
end

-- Append one entry to the run's history list. The list lives the record TTL from its first
-- entry (RPUSH answers the length: 1 is a new list, which gets its TTL; later entries leave it
-- alone, one command fewer per status callback). The list is written nowhere else, so it never
-- lacks a TTL.
local function rememberReceipt(r, now, outcome)
  local len = rcall("RPUSH", r.hist, receiptEntry(r, now, outcome))
  if len == 1 then
    rcall("PEXPIRE", r.hist, r.recordTtl)
  elseif len > 200 then
    -- the last 200 entries; the trim runs only past them
    rcall("LTRIM", r.hist, -200, -1)
  end
end

-- Apply one delivery status to a run's callback record (receipt_apply.lua's contract; also used
-- by window_mark_sent.lua to start the record with Twilio's answer in the same call).
-- `r` = {rec, hist, seen (the callback's repeat id: nil or "" = no repeat check), link (nil =
--        the caller's), runId, sid, status, code, dlr, now, source, recordTtl, attempt (token or
--        nil)}.
-- `link` is a global key (another slot): a caller that cannot declare it (a cluster, or the
-- one-call webhook) leaves it out; the 4th reply element then says whether the MessageSid link
-- is missing ("1": the record did not know this sid), for the caller to write. The reconcile
-- schedule is the send path's (markSentRun), never a receipt's.
local function applyReceipt(r)
  local rec = r.rec
  local runId, sid, status, code, dlr, source = r.runId, r.sid, r.status, r.code, r.dlr, r.source
  local now = r.now
  if type(now) == "number" then now = int(now) end
  -- A callback's repeat marker is a field of the record, "seen:<repeat id>" (HSETNX answers 0
  -- for a repeat), not a key of its own: a status callback adds no key to Redis, and the marker
  -- lives as long as the record it guards (both the record TTL; a repeat after the record
  -- expired meets no record either way). A marker that starts the record gives it its TTL below.
  local seen = r.seen and r.seen ~= ""
  if seen and rcall("HSETNX", rec, "seen:" .. r.seen, "1") == 0 then
    return {"repeat", rcall("HGET", rec, "status") or "", "", ""}
  end

  local rank = RECEIPT_RANKS[status]
  -- The send's own status usually starts the record: one EXISTS then answers what an HMGET of
  -- a missing key would (six nils), at ~a quarter of its cost (measured in Redis: an HMGET of
  -- six fields made into a Lua table ~10,800 instructions, an EXISTS ~3,000); a status
  -- callback's record is usually there, so the other sources read it at once.
  local cur
  if source == "send" and rcall("EXISTS", rec) == 0 then
    cur = NO_RECORD
  else
    cur = rcall("HMGET", rec, "sid", "status", "rank", "dlr", "accepted_at", "error_code")
  end
  local prev = cur[2] or ""
  -- the send path links its sid when it marks the message; any other sid needs its link
  local unlinked = ""
  if cur[1] ~= sid then unlinked = "1" end

  if r.link then rcall("SET", r.link, runId, "PX", r.recordTtl) end
  if rank == nil then
    rememberReceipt(r, now, "unknown")
    -- the marker may have started the record (a record without accepted_at has no status that
    -- gave it its TTL; every other outcome below either applies, which sets it, or needs one)
    if seen and not cur[5] then rcall("PEXPIRE", rec, r.recordTtl) end
    return {"unknown", prev, prev, unlinked}
  end
  if cur[1] and cur[1] ~= sid then
    rememberReceipt(r, now, "other")
    return {"other", prev, prev, unlinked}
  end

  local curRank = tonumber(cur[3])
  local outcome = "applied"
  if curRank ~= nil then
    if rank < curRank then
      outcome = "stale"
    elseif rank == curRank then
      if status == prev then
        outcome = "same"
      elseif dlr ~= "" and cur[4] and cur[4] ~= "" and dlr > cur[4] then
        outcome = "applied"
      elseif dlr ~= "" and cur[4] and cur[4] ~= "" and dlr < cur[4] then
        outcome = "stale"
      elseif rank == 3 then
        outcome = "conflict"
        rcall("HSET", rec, "conflict", "1")
      else
        outcome = "same"
      end
    end
  end
  -- The send's own entry, when it starts the record (the usual case: no status of this run
  -- came first), is a field of the record ("send"), not an entry of the list: the list and its
  -- TTL cost two commands and a key per message, and a run now gets a list only with its first
  -- status callback or poll. A record without a sid has never seen a ranked status, so the send
  -- is the run's first entry: readers put it first (`receipts::history_of`). A send after some
  -- status of its run (a status callback that beat the marker) appends to the list as before.
  local inline = outcome == "applied" and source == "send" and not cur[1]
  if not inline then rememberReceipt(r, now, outcome) end
  if outcome ~= "applied" then
    if outcome == "same" and code ~= "" and not cur[6] then
      rcall("HSET", rec, "error_code", code)
    end
    return {outcome, prev, prev, unlinked}
  end

  -- one HSET (each Redis command costs more than the Lua that builds its arguments)
  local fields = {"run_id", runId, "sid", sid, "status", status, "rank", int(rank), "updated_at", now,
    "source", source}
  local n = #fields
  if code ~= "" then fields[n + 1], fields[n + 2], n = "error_code", code, n + 2 end
  if dlr ~= "" then fields[n + 1], fields[n + 2], n = "dlr", dlr, n + 2 end
  if not cur[5] then fields[n + 1], fields[n + 2], n = "accepted_at", now, n + 2 end
  if inline then fields[n + 1], fields[n + 2] = "send", sendEntry(r, now) end
  rcall("HSET", rec, unpack(fields))
  -- The record lives the record TTL from its first applied status (the one that sets
  -- accepted_at), as the claim, the attempt record and the link live it from the send: a later
  -- status does not refresh it (one command fewer per status callback). A record without
  -- accepted_at (none yet, or only an escalation or conflict flag) gets its TTL here.
  if not cur[5] then rcall("PEXPIRE", rec, r.recordTtl) end
  return {"applied", status, prev, unlinked}
end

-- The open-attempts index in Redis's skiplist encoding. Redis keeps a sorted set of up to 128
-- members (`zset-max-listpack-entries`) as one listpack, where a ZADD scans every member for
-- the new one and every score for its place, and a ZREM scans for the member: with the ~50
-- attempts in flight at concurrency 50, the index's ZADD (claim) and ZREM (marker) cost Redis
-- ~34,500 instructions per text, against ~11,700 in the skiplist encoding (a dict and a
-- skiplist; scripts/bench-window-steps); whole SMS jobs through the worker, 1.35 % fewer
-- (scripts/bench-instructions; docs/benchmarks.md, "The window taken apart"). A member over
-- `zset-max-listpack-value` (64 bytes) converts the set for as long as it exists (Redis never
-- converts a sorted set back; it deletes an empty one): the claim adds one and removes it in the
-- same step, once per call, so no reader ever sees it. The pad cannot be a runId (braces, and
-- longer than a runId may be). Nothing of the operator's configuration changes; "ziplist" is
-- Redis 5/6's name for the compact encoding; a server that refuses OBJECT (an ACL without it, a
-- Redis-like server without it) keeps the compact encoding, and the claim goes on (redis.pcall).
local WIDE_PAD = "{ringback:index-encoding}" .. string.rep("=", 112)
local widened = {}
local function keepIndexWide(index)
  if widened[index] then return end
  widened[index] = true
  local encoding = redis.pcall("OBJECT", "ENCODING", index)
  if encoding == "listpack" or encoding == "ziplist" then
    rcall("ZADD", index, "+inf", WIDE_PAD)
    rcall("ZREM", index, WIDE_PAD)
  end
end

-- claimRun's new attempt: the claim (a lease) and the record, in one step. `hadRecord`: the
-- record exists (it is replaced).
-- What a send decision needs of the callback beyond its text, kept on the attempt record for
-- every path that rebuilds the request from the record alone (the orphan sweep, drain, resend):
-- `urgent` ("1": sent inside quiet hours), `tz` (the zone its quiet hours are read in) and `ask`
-- (its question and ladder, as job data fields: an orphan sent without its job opens the ladder
-- its job asked for). Written only when set, so a plain callback's record is as small as before.
local function keepSendFacts(attemptKey, urgent, tz, ask)
  if urgent == "1" then rcall("HSET", attemptKey, "urgent", "1") end
  if tz ~= nil and tz ~= "" then rcall("HSET", attemptKey, "tz", tz) end
  if ask ~= nil and ask ~= "" then rcall("HSET", attemptKey, "ask", ask) end
end

local function freshAttempt(keys, args, now, token, hadRecord)
  local claimKey, attemptKey, index = keys[1], keys[2], keys[5]
  local nowS = int(now)
  rcall("SET", claimKey, "pending:" .. token, "PX", args[12])
  if hadRecord then rcall("DEL", attemptKey) end
  rcall("HSET", attemptKey, "token", token, "job", args[2], "worker", args[3], "state", "claimed",
    "claimed_at", nowS, "since", nowS, "to", args[8], "from", args[9], "body", args[10])
  keepSendFacts(attemptKey, args[15], args[16], args[18])
  rcall("PEXPIRE", attemptKey, args[7])
  -- dead at claimed_at + pending TTL if still claimed: the sweep looks then
  if index then
    rcall("ZADD", index, int(now + tonumber(args[5])), args[11])
    keepIndexWide(index)
  end
  -- the console's newest-first list, capped approximately: the trim runs on about one new
  -- member in 16 (the token's last hex digit is 0; a token is a random UUID), so the list
  -- may hold a few dozen past the cap between trims, never more for long; no ZCARD per claim
  if keys[6] then
    if rcall("ZADD", keys[6], nowS, args[11]) == 1 and string.byte(token, -1) % 16 == 0 then
      rcall("ZREMRANGEBYRANK", keys[6], "0", int(-tonumber(args[13]) - 1))
    end
  end
  return {"claimed", token, now}
end

-- A Redis that lost acknowledged writes: a restart from an AOF that missed its last second, a
-- replica promoted before it had every write, a restore. Such a Redis may have forgotten a claim
-- or a sent marker, and the retried job would claim afresh and text again. Its server identity
-- (INFO's run_id, new with every process) tells: ringback keeps the identity that acknowledged
-- its writes in `idKey`, and the first claim that finds another one records the change on
-- Redis's clock. For `span` ms after it (the time a job whose claim was lost takes to run again,
-- twice) a claim that would open a fresh attempt hands it to evidence first instead. A clean
-- restart or failover looks the same and pays the same. The key absent (a new deployment, a
-- flush, which also empties the queue) is a first sight, not a loss. `write`: record a change
-- (window_claim); a reader (the fused finish) only asks. Returns when the change was noticed
-- (ms), or nil outside a window (or when Redis will not say).
local REDIS_IDENTITY = "ringback:redis-identity"
local function redisLost(idKey, now, span, write)
  if idKey == nil then return nil end
  -- a Redis that refuses INFO (an ACL) cannot tell: the probe at start names it
  local info = redis.pcall("INFO", "server")
  if type(info) ~= "string" then return nil end
  local live = string.match(info, "run_id:(%x+)")
  if live == nil then return nil end
  local known = rcall("HMGET", idKey, "run", "changed_at", "until")
  if not known[1] then
    if write then rcall("HSET", idKey, "run", live, "first_seen", int(now)) end
    return nil
  end
  if known[1] ~= live then
    if not write then return now end
    local untilAt = int(now + (span or 0))
    rcall("HSET", idKey, "run", live, "was", known[1], "changed_at", int(now), "until", untilAt)
    return now
  end
  local at, untilAt = tonumber(known[2]), tonumber(known[3])
  if at == nil then return nil end
  if now < (untilAt or 0) or (span ~= nil and now < at + span) then return at end
  return nil
end

-- window_claim.lua's step: `keys`/`args` as that script's KEYS/ARGV (its header is the contract);
-- the identity (4) and the global keys (5, 6) may be nil: the caller writes them in separate calls. `now`: Redis's
-- time (ms) when a fused caller already read it (one TIME per call), else nil.
local function claimRun(keys, args, now)
  local claimKey, attemptKey, index = keys[1], keys[2], keys[5]
  now = now or redisNowMs()
  -- PerSlot: the caller's index entry (its intent) is due at args[14]; past it a sweep may have
  -- taken the entry and may drop it, so no attempt is opened on it: the caller comes back
  local intentDue = tonumber(args[14])
  local intentGone = intentDue ~= nil and now >= intentDue
  local lost = redisLost(keys[4], now, tonumber(args[17]), true)
  -- A new run has none of its three keys: one EXISTS answers that, and the reads are skipped
  -- (and so is everything below: a new run is the common case)
  -- (inside a lost-writes window it goes on to the reads, which find nothing, and looks first)
  if not lost and rcall("EXISTS", claimKey, attemptKey, keys[3]) == 0 then
    if intentGone then return {"busy", 1, now} end
    return freshAttempt(keys, args, now, args[1], false)
  end
  local nowS = int(now)
  local pendingTtl, hold, lease = tonumber(args[5]), tonumber(args[6]), args[12]
  local supersede, runId = args[4], args[11]
  local v = rcall("GET", claimKey)
  local flat = rcall("HGETALL", attemptKey)
  local receipt = rcall("HGET", keys[3], "sid") or ""
  local rec = {}
  for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end

  local function sent(sid)
    if index then rcall("ZREM", index, runId) end
    return {"sent", sid, now}
  end

  -- Hold the claim under `token` and hand the resolution to this caller. `origin`: "own" when
  -- ringback's record says when its attempt began (`since` is then its claim), "taken" when the
  -- claim was taken over from a writer with no record (the legacy worker's plain "pending", or a
  -- ringback claim whose record is gone): its send may predate `since` by the legacy lookback.
  local function resolveWith(token, since, origin)
    if intentGone then return {"busy", 1, now} end
    local to, from, body = rec["to"] or args[8], rec["from"] or args[9], rec["body"] or args[10]
    origin = origin or rec["origin"] or "own"
    rcall("SET", claimKey, "pending:" .. token, "PX", lease)
    rcall("HSET", attemptKey, "token", token, "job", args[2], "worker", args[3], "state", "ambiguous",
      "since", since, "to", to, "from", from, "body", body, "touched", nowS, "origin", origin)
    -- a record taken over (the legacy worker's claim) learns them from this caller's job
    keepSendFacts(attemptKey, rec["urgent"] == nil and args[15] or nil,
      rec["tz"] == nil and args[16] or nil, rec["ask"] == nil and args[18] or nil)
    rcall("PEXPIRE", attemptKey, args[7])
    -- a resolver touches the attempt every poll; half the hold without a touch means it is gone
    if index then rcall("ZADD", index, int(now + math.floor(hold / 2)), runId) end
    return {"resolve", token, since, to, from, body, receipt, rec["escalated"] or "", origin, now}
  end

  -- A new attempt (the record, when there is one, is replaced: a path below may have DELeted it);
  -- inside a lost-writes window, evidence first (redisLost), unless the caller `looked` since
  local function fresh(token, looked)
    if intentGone then return {"busy", 1, now} end
    if lost and not looked then return resolveWith(token, int(lost), "lost") end
    return freshAttempt(keys, args, now, token, #flat > 0)
  end

  local function since() return rec["since"] or rec["claimed_at"] or nowS end
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
      return resolveWith(args[1], nowS, "taken")
    end
    local token = string.sub(v, 9)
    if rec["token"] ~= token then
      -- A ringback claim without its record (expired, or removed by hand): unknown, so resolve.
      rec = {}
      rcall("DEL", attemptKey)
      return resolveWith(token, nowS, "taken")
    end
    if supersede ~= "" and supersede == token and rec["state"] == "ambiguous" then
      -- The caller resolved this attempt as never sent: replace it atomically, so the claim never
      -- disappears between the old attempt and the new one. A resolution that began before Redis
      -- lost writes looks again: what it ruled out predates what Redis forgot (model: FORGET).
      return fresh(args[1], lost ~= nil and (tonumber(rec["since"]) or 0) >= lost)
    end
    if rec["state"] == "claimed" then
      local deadAt = (tonumber(rec["claimed_at"]) or now) + pendingTtl
      -- The same call again (its reply was lost and the caller re-sent it with its token): the
      -- first execution claimed for this caller, so it answers as that one did. The caller
      -- sends only within its freshness bound from its first send (the model's A1).
      if token == args[1] and rec["job"] == args[2] and now < deadAt then
        return {"claimed", token, now}
      end
      if now < deadAt then return {"busy", deadAt - now, now} end
      return resolveWith(token, since())
    end
    if rec["state"] == "ambiguous" then return resolveWith(token, since()) end
    if rec["state"] == "sent" then
      rcall("SET", claimKey, "sent:" .. (rec["sid"] or ""), "PX", args[7])
      return sent(rec["sid"] or "")
    end
    -- retry (or an older record's released / send-failed) under our own claim: Twilio took nothing
    return fresh(args[1])
  end

  if open then
    -- the lease ran out under an attempt that never finished its window: resolve before any send
    local token = rec["token"]
    if token == nil or token == "" then token = args[1] end
    return resolveWith(token, since())
  end
  if rec["state"] == "sent" and rec["sid"] then
    rcall("SET", claimKey, "sent:" .. rec["sid"], "PX", args[7])
    return sent(rec["sid"])
  end
  if receipt ~= "" then
    -- a status callback already proved a message for this run
    rcall("SET", claimKey, "sent:" .. receipt, "PX", args[7])
    return sent(receipt)
  end
  return fresh(args[1])
end

-- window_mark_sent.lua's step: `keys`/`args` as that script's KEYS/ARGV (its header is the contract);
-- the global keys (3, 4, 7) may be nil: the caller writes them in separate calls. `now` as
-- claimRun's.
local function markSentRun(keys, args, now)
  local index, link, reconcile = keys[3], keys[4], keys[7]
  now = now or redisNowMs()
  if args[7] == "found" and link then
    local owner = rcall("GET", link)
    if owner and owner ~= args[4] then return 2 end
  end
  local overrun = 0
  local was
  if SET_ANSWERS_OLD then
    was = rcall("SET", keys[1], "sent:" .. args[2], "PX", args[3], "GET")
  else
    was = rcall("GET", keys[1])
    rcall("SET", keys[1], "sent:" .. args[2], "PX", args[3])
  end
  if was ~= "pending:" .. args[1] then
    -- The same call again (its first reply was lost, and a caller or the client re-sent it):
    -- the first execution wrote everything below; this one is no overrun and writes nothing.
    if was == "sent:" .. args[2] then
      local mine = rcall("HMGET", keys[2], "token", "sid")
      if mine[1] == args[1] and mine[2] == args[2] then return 0 end
    end
    overrun = 1
  end
  -- the record's TTL: the claim set it to the sent TTL already (the marker refreshes it only where
  -- it writes a record of its own: seconds of difference after days are not worth a command)
  if rcall("HGET", keys[2], "token") == args[1] then
    rcall("HSET", keys[2], "state", "sent", "sid", args[2], "sent_at", int(now))
  elseif rcall("EXISTS", keys[2]) == 0 then
    rcall("HSET", keys[2], "token", args[1], "state", "sent", "sid", args[2], "sent_at", int(now))
    rcall("PEXPIRE", keys[2], args[3])
  else
    rcall("PEXPIRE", keys[2], args[3])
  end
  if index then rcall("ZREM", index, args[4]) end
  applyReceipt({rec = keys[5], hist = keys[6], seen = "", link = link,
    runId = args[4], sid = args[2], status = args[5], code = "", dlr = "", now = now,
    source = "send", recordTtl = args[3], attempt = args[1]})
  -- every sent message is looked up when due; the reconciler drops it then if a receipt
  -- already ended it (a status callback may even have come before this marker)
  if reconcile then rcall("ZADD", reconcile, int(now + tonumber(args[6])), args[2]) end
  return overrun
end
