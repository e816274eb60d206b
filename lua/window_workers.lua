--[[
  window_workers: the ringback workers' heartbeats, scored on Redis's clock, so that every host
  is judged on one clock (a worker whose own clock is minutes off is still seen alive) and
  `ringback drain` can tell a live worker from a dead one.

  KEYS[1] the heartbeats (ZSET "<name> (<worker id>)" -> last beat, ms on Redis's clock)
  KEYS[2] the same members -> until when each is alive (ms on Redis's clock): the beat plus the
          window the worker itself advertises (three of its own intervals), so liveness does
          not depend on the settings of the process that asks. In KEYS[1]'s slot.

  ARGV[1] "beat" | "stop" | "live" | "lapsed"
  ARGV[2] beat, stop: the member; live: within (ms), for members a worker that advertises no
          window wrote (an earlier version: KEYS[1] only); lapsed: how far back (ms)
  ARGV[3] beat: how long this beat keeps the worker alive (ms)

  Returns beat: Redis's now (ms); stop: 1 removed, 0 not there; live: the members alive now;
  lapsed: {how many workers' windows ended within ARGV[2] ms before now, the longest of those
  windows (ms)}: a worker Redis kept from beating (a pause longer than its window) looks like
  one of these the moment Redis answers again
]]
local key, untilKey, op = KEYS[1], KEYS[2], ARGV[1]
local now = redisNowMs()
if op == "beat" then
  rcall("ZADD", key, now, ARGV[2])
  rcall("PEXPIRE", key, 86400000)
  rcall("ZADD", untilKey, now + tonumber(ARGV[3]), ARGV[2])
  rcall("PEXPIRE", untilKey, 86400000)
  return now
end
if op == "stop" then
  rcall("ZREM", untilKey, ARGV[2])
  return rcall("ZREM", key, ARGV[2])
end
if op == "lapsed" then
  local count, longest = 0, 0
  local ended = rcall("ZRANGEBYSCORE", untilKey, now - tonumber(ARGV[2]), "(" .. now, "WITHSCORES")
  for i = 1, #ended, 2 do
    local beat = rcall("ZSCORE", key, ended[i])
    if beat then
      count = count + 1
      local window = tonumber(ended[i + 1]) - tonumber(beat)
      if window > longest then longest = window end
    end
  end
  return {count, longest}
end
-- alive: by the window each worker advertised; a member without one, by the caller's
local live = rcall("ZRANGEBYSCORE", untilKey, now, "+inf")
for _, member in ipairs(rcall("ZRANGEBYSCORE", key, now - tonumber(ARGV[2]), "+inf")) do
  if not rcall("ZSCORE", untilKey, member) then
    live[#live + 1] = member
  end
end
return live
