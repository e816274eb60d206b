--[[
  extend_locks: renew the locks of many running jobs in one call.

  A lock is renewed only while it still holds our token; a renewed job is
  removed from the `stalled` set so the next stall sweep leaves it alone.

  KEYS[1] stalled

  ARGV[1] key prefix "<prefix>:<queue>:"
  ARGV[2] lock duration (ms)
  ARGV[3..] pairs: jobId, token

  Returns the list of job ids whose lock was missing or owned by another token.
]]
local prefix = ARGV[1]
local duration = ARGV[2]
local lost = {}
for i = 3, #ARGV, 2 do
  local jobId, token = ARGV[i], ARGV[i + 1]
  local lockKey = prefix .. jobId .. ":lock"
  if rcall("GET", lockKey) == token then
    rcall("SET", lockKey, token, "PX", duration)
    rcall("SREM", KEYS[1], jobId)
  else
    table.insert(lost, jobId)
  end
end
return lost
