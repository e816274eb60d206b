--[[
  ladder_advance: start a run's next step, or end its ladder, in one call (model/ladder.pml).
  The caller names the step it read: a ladder that moved on, stopped or is not due yet is left
  as it is, so two workers and serve never both start a step, and no step starts after the
  person acknowledged. Past the last step the ladder is exhausted and its escalation is due
  (`escalate` in the record, written here, so a crash after this call loses nothing: the
  caller adds the escalation job under an id of the run's, and clears `escalate`).

  A Redis that lost acknowledged writes (window.lua's redisLost: an AOF a second old, a replica
  promoted behind) may have forgotten a step already claimed, whose sender may still be creating
  its call: a step claimed within the lost-writes window after the change says so, its caller
  sends nothing, and the step is adopted as an orphaned claim is (ladder_adopt.lua), once the
  lease is over, its send looked for from the window's start (`first:<k>`): never a second
  call.

  KEYS[1] ladder record
  KEYS[2] the Redis identity (window_claim.lua's KEYS[4], of the record's slot on a Cluster)
  KEYS[3] ladder due index (global: absent = the caller writes it in a separate call)

  ARGV[1] the step the caller read (0: the text)
  ARGV[2] the new step's token
  ARGV[3] the new step's wait (ms, from now)
  ARGV[4] runId
  ARGV[5] the lost-writes window (ms; window_claim.lua's ARGV[17])
  ARGV[6] how long after a call's create the ladder waits for its end before running out (ms;
          "0": calls take no key, the ladder runs out at its last due)

  Returns {"claimed", step, token, due, lost}: the step is the caller's to send (its claim
  `pending:<token>` in the record), the next due at `due` (ms, Redis's clock), `lost` when the
  Redis changed within the lost-writes window (ms; "0" outside one); {"exhausted"}: the
  escalation is due; {"early", due} (also past the last step while a call of the ladder may still
  ring: a key pressed on it still acknowledges, so the ladder runs out only once it ended); {"moved", step}; {"stopped"}; {"over"} (exhausted before);
  {"none"} (no ladder)
]]
local now = redisNowMs()
local state, step, steps, due = unpack(rcall("HMGET", KEYS[1], "state", "step", "steps", "due"))
if not state then return {"none"} end
if state == "stopped" then return {"stopped"} end
if state ~= "climbing" then return {"over"} end
step = tonumber(step)
if step ~= tonumber(ARGV[1]) then return {"moved", tostring(step)} end
if now < tonumber(due) then return {"early", due} end
if step >= tonumber(steps) then
  -- a call still ringing (or a create still unresolved) may yet be answered by a key: looked at
  -- again shortly, up to its bound, before anyone is told that nobody answered
  local bound = tonumber(ARGV[6] or "0")
  local waits = 0
  for k = 1, bound > 0 and step or 0 do
    local since
    if rcall("HEXISTS", KEYS[1], "ringing:" .. k) == 1 then
      since = rcall("HGET", KEYS[1], "sent:" .. k)
    elseif string.sub(rcall("HGET", KEYS[1], "claim:" .. k) or "", 1, 8) == "pending:" then
      since = rcall("HGET", KEYS[1], "started:" .. k)
    end
    local untl = tonumber(since or "0") + bound
    if since and untl > now and untl > waits then waits = untl end
  end
  if waits > 0 then
    local again = math.min(waits, now + 2000)
    rcall("HSET", KEYS[1], "due", again)
    if KEYS[3] then rcall("ZADD", KEYS[3], again, ARGV[4]) end
    return {"early", tostring(again)}
  end
  rcall("HSET", KEYS[1], "state", "exhausted", "escalate", now, "ended", now)
  -- still indexed: the sweep that finds `escalate` adds the escalation, then unindexes it
  if KEYS[3] then rcall("ZADD", KEYS[3], now, ARGV[4]) end
  return {"exhausted"}
end
local k = step + 1
local lost = redisLost(KEYS[2], now, tonumber(ARGV[5]), true) or 0
local next_due = now + tonumber(ARGV[3])
rcall("HSET", KEYS[1], "step", k, "due", next_due, "claim:" .. k, "pending:" .. ARGV[2],
  "started:" .. k, now)
if lost > 0 then rcall("HSET", KEYS[1], "first:" .. k, int(lost - tonumber(ARGV[5]))) end
if KEYS[3] then rcall("ZADD", KEYS[3], next_due, ARGV[4]) end
return {"claimed", tostring(k), ARGV[2], tostring(next_due), tostring(int(lost))}
