--[[
  window_identity: note the server identity of the Redis that serves KEYS[1] before a claim
  needs it (window.lua's redisLost, as window_claim runs it): recorded when absent, a change
  recorded when another server acknowledged the writes kept there. Each worker and `serve` runs
  it once at start for every identity key it claims under (one on one Redis, one per hash slot on
  a Cluster), so a slot whose first claim falls in a second its shard later forgets still has an
  identity to compare with.

  KEYS[1] the Redis identity (window_claim.lua's KEYS[4])
  ARGV[1] the lost-writes window (ms; window_claim.lua's ARGV[17])

  Returns when the change was noticed (ms) while inside a lost-writes window, else 0.
]]
return redisLost(KEYS[1], redisNowMs(), tonumber(ARGV[1]), true) or 0
