--[[
  claim_due: take up to N members of a schedule (ZSET member -> due ms) that are due, leasing
  each to the caller by pushing its score `lease` ms on. Several replicas polling together never
  take the same member twice; a member whose poller died comes due again after the lease.

  KEYS[1] the schedule

  ARGV[1] now (ms)
  ARGV[2] max members
  ARGV[3] lease (ms)

  Returns the members taken.
]]
local due = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[1], "LIMIT", 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  rcall("ZADD", KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[3]), m)
end
return due
