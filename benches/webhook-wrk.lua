-- wrk's script for `scripts/bench webhook`: POSTs pre-signed Twilio status callbacks (written by
-- node-harness/bin/bench-webhook.js), each thread its own share of the file, in file order, so
-- every request is distinct except the repeats the file itself holds (Twilio's retries).
--
--   wrk -t2 -c50 -d10s --latency -s benches/webhook-wrk.lua http://127.0.0.1:PORT -- FILE THREADS [SKIP]
--
-- FILE: one request a line, tab-separated: path (with ?runId=…&attempt=…), X-Twilio-Signature,
-- I-Twilio-Idempotency-Token, form body. THREADS: wrk's -t (a thread's share is every
-- THREADS-th line). SKIP: lines to leave out at the start (a later run that must not repeat
-- what an earlier one sent). A thread that has sent its share starts it again and counts that in
-- `wraps`: from then on its requests are repeats, so a measured run must not wrap (the
-- warm-up pass does, until the bench sees every run's record in Redis and stops wrk).
-- done() prints one line, `WRK {json}`: requests, µs, errors, non-2xx answers, latency
-- percentiles (µs), wraps.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local file, nthreads, skip = args[1], tonumber(args[2]), tonumber(args[3] or "0")
  local id = wrk.thread:get("id")
  reqs = {}
  local line_no = -skip
  for line in io.lines(file) do
    if line_no >= 0 and line_no % nthreads == id then
      local p, sig, idem, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      reqs[#reqs + 1] = wrk.format("POST", p, {
        ["Content-Type"] = "application/x-www-form-urlencoded",
        ["X-Twilio-Signature"] = sig,
        ["I-Twilio-Idempotency-Token"] = idem,
      }, body)
    end
    line_no = line_no + 1
  end
  next_req, wraps = 1, 0
end

function request()
  if next_req > #reqs then
    next_req = 1
    wraps = wraps + 1
  end
  local r = reqs[next_req]
  next_req = next_req + 1
  return r
end

function done(summary, latency, requests)
  local wrapped = 0
  for _, t in ipairs(threads) do wrapped = wrapped + (t:get("wraps") or 0) end
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"micros":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,' ..
    '"timeouts":%d,"non2xx":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"wraps":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, wrapped))
end
