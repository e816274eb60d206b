--[[
  add_log: append one row to a job's log (`<job key>:logs`), keeping the last `keepLogs` rows
  when the job's options set it, as Node's `job.log()` does.

  KEYS[1] job key
  KEYS[2] the job's logs key

  ARGV[1] the row
  ARGV[2] keepLogs ("" = keep all)

  Returns the number of rows kept, or -1 when the job does not exist
]]
if rcall("EXISTS", KEYS[1]) == 0 then return -1 end
local count = rcall("RPUSH", KEYS[2], ARGV[1])
if ARGV[2] ~= "" then
  local keep = tonumber(ARGV[2])
  rcall("LTRIM", KEYS[2], -keep, -1)
  return math.min(keep, count)
end
return count
