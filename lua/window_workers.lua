--[[
  window_workers: the ringback workers' heartbeats, scored on Redis's clock, so that every host
  is judged on one clock (a worker whose own clock is minutes off is still seen alive) and
  `ringback drain` can tell a live worker from a dead one.

  KEYS[1] the heartbeats (ZSET "<name> (<worker id>)" -> last beat, ms on Redis's clock)

  ARGV[1] "beat" | "stop" | "live"
  ARGV[2] beat, stop: the member; live: within (ms)

  Returns beat: Redis's now (ms); stop: 1 removed, 0 not there; live: the members that beat
  within ARGV[2] ms of Redis's now
]]
local key, op = KEYS[1], ARGV[1]
local now = redisNowMs()
if op == "beat" then
  rcall("ZADD", key, now, ARGV[2])
  rcall("PEXPIRE", key, 86400000)
  return now
end
if op == "stop" then
  return rcall("ZREM", key, ARGV[2])
end
return rcall("ZRANGEBYSCORE", key, now - tonumber(ARGV[2]), "+inf")
