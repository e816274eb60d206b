--[[
  question_answer_take: hand a question's answer claim from a message that never became an answer
  to the message at hand, only if the claim still names that message (one key: one slot).

  A message claims a question (`SET … NX`) before it is recorded. A handler cut between the two
  (serve killed, a connection dropped) leaves a claim no record backs, and Twilio may never post
  that message again: the caller has checked it has no record and that its handler cannot still
  record it (its last post is older than the grace period), and takes the claim over here.

  KEYS[1] the question's answer claim (its value: the claiming MessageSid)

  ARGV[1] the MessageSid the claim must still name
  ARGV[2] the MessageSid taking it over
  ARGV[3] the claim's TTL (ms)

  Returns the MessageSid the claim names after the call
]]
local holder = rcall("GET", KEYS[1])
if holder == ARGV[1] then
  rcall("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
  return ARGV[2]
end
return holder
