--[[
  webhook-rank: the Node express receiver's one call per status callback (node-harness/bin/
  webhook-receiver.js, the other half of `scripts/bench webhook`). It does the work ringback's
  receipt step does, on keys of the same kind, all in the run's slot: drop a repeat, rank the
  status, keep the record's best status and a capped history. Lifetimes as ringback's: the record
  and the history live the record TTL from their first write, not refreshed by later statuses.

  KEYS[1] the run's record (hash: sid, status, rank, dlr, error_code, first_at, updated_at, and
          a repeat marker field per callback, "seen:<repeat id>", as ringback keeps them)
  KEYS[2] the run's history (list of JSON entries, the newest 200)

  ARGV[1] runId    ARGV[4] error code ("" = none)   ARGV[7] repeat id (the idempotency token's,
                                                            or the signed parameters' hash)
  ARGV[2] sid      ARGV[5] RawDlrDoneDate ("")      ARGV[8] record TTL (ms)
  ARGV[3] status   ARGV[6] now (ms)                 ARGV[9] attempt ("" = none)

  Returns {verdict, status held now, status held before, link}:
    verdict  "repeat" | "new" | "better" | "older" | "unchanged" | "clash" | "foreign" | "unranked"
    link     "1" when the record held no sid or another one: the caller links sid -> runId
]]
local record, history = KEYS[1], KEYS[2]
local runId, sid, status, code, dlr, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local ttl = ARGV[8]

if redis.call("HSETNX", record, "seen:" .. ARGV[7], "1") == 0 then
  return {"repeat", redis.call("HGET", record, "status") or "", "", ""}
end

local held = redis.call("HMGET", record, "sid", "status", "rank", "dlr", "error_code")
local heldSid, heldStatus, heldRank, heldDlr = held[1], held[2] or "", tonumber(held[3]), held[4] or ""
local link = ""
if heldSid ~= sid then link = "1" end

-- Twilio's message statuses, least to most final; `read` comes after delivery
local level = ({accepted = 1, scheduled = 1, queued = 1, sending = 2, sent = 3,
  delivered = 4, undelivered = 4, failed = 4, canceled = 4, partially_delivered = 4,
  read = 5})[status]

local verdict
if level == nil then
  verdict = "unranked"
elseif heldSid and heldSid ~= sid then
  verdict = "foreign"
elseif heldRank == nil then
  verdict = "new"
elseif level > heldRank then
  verdict = "better"
elseif level < heldRank then
  verdict = "older"
elseif status == heldStatus then
  verdict = "unchanged"
elseif dlr ~= "" and heldDlr ~= "" then
  -- equal level: the later delivery report wins
  if dlr > heldDlr then verdict = "better" else verdict = "older" end
elseif level == 4 then
  verdict = "clash"
else
  verdict = "unchanged"
end

local entry = {at = tonumber(now), sid = sid, status = status, verdict = verdict, via = "webhook"}
if code ~= "" then entry.error_code = code end
if dlr ~= "" then entry.dlr = dlr end
if ARGV[9] ~= "" then entry.attempt = ARGV[9] end
local length = redis.call("RPUSH", history, cjson.encode(entry))
if length > 200 then redis.call("LTRIM", history, length - 200, -1) end
if length == 1 then redis.call("PEXPIRE", history, ttl) end

if verdict == "new" or verdict == "better" then
  local set = {"sid", sid, "status", status, "rank", level, "updated_at", now}
  if code ~= "" then set[#set + 1] = "error_code"; set[#set + 1] = code end
  if dlr ~= "" then set[#set + 1] = "dlr"; set[#set + 1] = dlr end
  if verdict == "new" then set[#set + 1] = "first_at"; set[#set + 1] = now end
  redis.call("HSET", record, unpack(set))
  if verdict == "new" then redis.call("PEXPIRE", record, ttl) end
  return {verdict, status, heldStatus, link}
end
-- a marker that started the record: it lives the record TTL too
if verdict == "unranked" and heldRank == nil then redis.call("PEXPIRE", record, ttl) end
if verdict == "clash" then redis.call("HSET", record, "clash", "1") end
if verdict == "unchanged" and code ~= "" and not held[5] then
  redis.call("HSET", record, "error_code", code)
end
return {verdict, heldStatus, heldStatus, link}
