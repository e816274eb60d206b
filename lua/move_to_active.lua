--[[
  move_to_active: take the next ready job, lock it, and return it.

  Promotes due delayed jobs first, then honours the rate limit (meta.max or
  the worker's limiter), a paused queue (v6 meta.paused; v5 jobs sit in the
  `paused` list) and global concurrency (meta.concurrency).

  KEYS[1]  wait          KEYS[7]  delayed
  KEYS[2]  active        KEYS[8]  paused
  KEYS[3]  prioritized   KEYS[9]  meta
  KEYS[4]  events        KEYS[10] pc (priority counter)
  KEYS[5]  stalled       KEYS[11] marker
  KEYS[6]  limiter

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] now (ms)
  ARGV[3] lock token
  ARGV[4] lock duration (ms)
  ARGV[5] worker name ("" = none; written as `pb`)
  ARGV[6] limiter max ("" = none)
  ARGV[7] limiter duration ms ("" = none)

  Returns {fields, jobId, 0, 0}     a job was taken (fields = HGETALL flat array)
          {0, 0, pttl, 0}           rate limited for pttl ms
          {0, 0, 0, nextDelayedMs}  nothing ready; a delayed job is due then
          {0, 0, 0, 0}              nothing ready (or paused / maxed)
]]
local q = {prefix = ARGV[1], wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3],
  events = KEYS[4], stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7],
  paused = KEYS[8], meta = KEYS[9], pc = KEYS[10], marker = KEYS[11]}
local w = {token = ARGV[3], lockDuration = ARGV[4], name = ARGV[5],
  limiterMax = ARGV[6], limiterDuration = ARGV[7]}
return fetchNext(q, ARGV[2], w) or {0, 0, 0, 0}
