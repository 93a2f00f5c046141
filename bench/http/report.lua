-- weft-bench's http workload: wrk's summary as one line for the runner
-- (bench/wl_http.c parses it).  Latency percentiles are wrk's, in us;
-- errors are every kind wrk counts (connect, read, write, timeout, and
-- responses that were not 2xx or 3xx).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50),
    latency:percentile(99),
    e.connect + e.read + e.write + e.timeout + e.status))
end
