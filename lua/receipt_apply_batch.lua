--[[
  receipt_apply_batch: several receipt_apply calls in one (issue 12's group commit, for status
  callbacks and polls that arrive together on one Redis). Each one's part is exactly
  receipt_apply.lua's KEYS/ARGV (that header is the contract), applied in the order given, so
  a repeat within one call is caught by the repeat marker the earlier one set, as between
  calls. One Redis only: the parts' keys are in their runs' slots.

  ARGV[1] n, the number of statuses
  ARGV[2] keys per status (2, or 3 with the repeat marker)   ARGV[3] arguments per status (10)
  KEYS[(i-1)*k+1 .. i*k]           status i's receipt_apply KEYS
  ARGV[3+(i-1)*a+1 .. 3+i*a]       status i's receipt_apply ARGV

  Returns one receipt_apply reply per status, in order.
]]
local n, nk, na = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if n == nil or nk == nil or na == nil or #KEYS ~= n * nk or #ARGV ~= 3 + n * na then
  return redis.error_reply("receipt_apply_batch: layout does not match its counts")
end
local out = {}
for i = 0, n - 1 do
  local k, a = i * nk, 3 + i * na
  local seen = nil
  if nk >= 3 then seen = KEYS[k + 3] end
  out[i + 1] = applyReceipt({rec = KEYS[k + 1], hist = KEYS[k + 2], seen = seen,
    runId = ARGV[a + 1], sid = ARGV[a + 2], status = ARGV[a + 3], code = ARGV[a + 4],
    dlr = ARGV[a + 5], now = ARGV[a + 6], source = ARGV[a + 7], repeatTtl = ARGV[a + 8],
    recordTtl = ARGV[a + 9], nextPoll = "", attempt = ARGV[a + 10]})
end
return out
