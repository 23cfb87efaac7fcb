-- wrk script for bench/run. Request shape from the environment:
--   BENCH_METHOD     GET (default) or POST
--   BENCH_BODY_FILE  file whose contents are sent as a JSON body
--   BENCH_HEADERS    extra headers, "Name: value" separated by "|"
-- At the end prints one parseable line:
--   RESULT requests=N duration_s=S rps=R p50_ms=… p90_ms=… p99_ms=… p999_ms=… max_ms=…
--          errors_connect=… errors_read=… errors_write=… errors_status=… errors_timeout=…
-- (latencies from wrk's histogram, in milliseconds; errors_status counts non-2xx/3xx).

wrk.method = os.getenv("BENCH_METHOD") or "GET"

local body_file = os.getenv("BENCH_BODY_FILE")
if body_file and body_file ~= "" then
  local file = assert(io.open(body_file, "rb"))
  wrk.body = file:read("*a")
  file:close()
  wrk.headers["Content-Type"] = "application/json"
end

local extra = os.getenv("BENCH_HEADERS")
if extra and extra ~= "" then
  for header in string.gmatch(extra, "[^|]+") do
    local name, value = string.match(header, "^%s*([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local function ms(microseconds) return microseconds / 1000 end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_s=%.3f rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f "
      .. "errors_connect=%d errors_read=%d errors_write=%d errors_status=%d errors_timeout=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    ms(latency:percentile(50)), ms(latency:percentile(90)), ms(latency:percentile(99)),
    ms(latency:percentile(99.9)), ms(latency.max),
    e.connect, e.read, e.write, e.status, e.timeout))
end
