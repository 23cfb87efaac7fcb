# bench/lib.sh — what the benchmark scripts share: a free port, and `portaria serve` started
# with the limits a load generator needs and stopped again. Sourced; expects BIN (the
# portaria binary), RESULTS (a directory for logs and the shared secrets key), and say/die.

# A port below the kernel's ephemeral range (outgoing connections such as wrk's take
# ports from that range, and binding one of those fails) that nobody listens on.
free_port() {
  local port low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 12000)) || low=32768
  for _ in $(seq 1 100); do
    port=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
  done
  return 1
}

# 10 000 WebSocket connections (and wrk's) need file descriptors; the server inherits this.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

SERVER_PID=
SERVER_PORT=
SERVER_PIDS=()
# start_server NAME DATABASE_URL — starts portaria, waits until /healthz answers 200.
# Sets SERVER_PID and SERVER_PORT; stop_server stops every server started.
start_server() {
  local name=$1 database=$2 attempt
  # Every instance of one database wraps its secrets with the same key (docs/ops.md).
  [[ -f "$RESULTS/secrets.key" ]] || (umask 077 && head -c 32 /dev/urandom | base64 >"$RESULTS/secrets.key")
  for attempt in 1 2 3 4 5; do
    SERVER_PORT=$(free_port) || die "no free port"
    # Per-request access logs would measure stderr, not the server: warnings only.
    PORTARIA_LOG_LEVEL=warning "$BIN" serve --enable-bench-routes --demo --host 127.0.0.1 --port "$SERVER_PORT" \
      --database "$database" --data-dir "$RESULTS/data-$name" --secrets-key-file "$RESULTS/secrets.key" --gate-limit 1000000 --unit-ring-limit 1000000 --gate-ring-limit 1000000 --login-limit 1000000 \
      --realtime-connections-per-user 1000000 --max-connections-per-ip 0 >"$RESULTS/server-$name.log" 2>&1 &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    local deadline=$((SECONDS + 30))
    until curl -fsS -o /dev/null "http://127.0.0.1:$SERVER_PORT/healthz" 2>/dev/null; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
        # Someone took the port between the check and the bind: try another.
        grep -q "cannot listen" "$RESULTS/server-$name.log" && ((attempt < 5)) && continue 2
        cat "$RESULTS/server-$name.log" >&2
        die "portaria ($name) exited"
      fi
      ((SECONDS < deadline)) || die "portaria ($name) did not answer /healthz within 30 s"
      sleep 0.1
    done
    say "portaria ($name) pid $SERVER_PID on 127.0.0.1:$SERVER_PORT"
    return 0
  done
}

stop_server() {
  local pid rss
  for pid in "${SERVER_PIDS[@]}"; do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "?")
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    say "portaria pid $pid stopped (RSS before stop: ${rss} kB)"
  done
  SERVER_PIDS=()
  SERVER_PID=
}


# start_push_sink DIR PKI TOKEN… — nghttpd (Debian's nghttp2-server, C) on a free port as
# a stand-in for APNs: it answers 200 to POST /3/device/<token> for each TOKEN given (one
# file per token under DIR; any other path is its 404), over TLS with PKI's server.pem,
# which PKI's ca.pem (scripts/testservers/make-test-pki) signs. Sets SINK_PID, SINK_PORT.
start_push_sink() {
  local dir=$1 pki=$2 token attempt
  shift 2
  mkdir -p "$dir/3/device"
  for token in "$@"; do printf '{}' >"$dir/3/device/$token"; done
  for attempt in 1 2 3 4 5; do
    SINK_PORT=$(free_port) || die "no free port"
    nghttpd -d "$dir" "$SINK_PORT" "$pki/server.key" "$pki/server.pem" >"$dir.log" 2>&1 &
    SINK_PID=$!
    for _ in $(seq 1 100); do
      curl -fsS --http2 --cacert "$pki/ca.pem" -o /dev/null -X POST --data '{}' \
        "https://127.0.0.1:$SINK_PORT/3/device/$1" 2>/dev/null && return 0
      kill -0 "$SINK_PID" 2>/dev/null || continue 2   # the port was taken: another
      sleep 0.1
    done
  done
  die "nghttpd did not start: $(cat "$dir.log")"
}

# metric_sum URL NAME [LABEL_MATCH] — the sum of a Prometheus family's samples at URL
# (`--metrics-listen`'s /metrics) whose labels contain LABEL_MATCH (e.g. outcome="accepted").
metric_sum() {
  curl -fsS "$1/metrics" 2>/dev/null | awk -v name="$2" -v match_="${3:-}" '
    index($0, name) == 1 && (substr($0, length(name) + 1, 1) == "{" || substr($0, length(name) + 1, 1) == " ") \
      && (match_ == "" || index($0, match_) > 0) { sum += $NF }
    END { printf "%.0f\n", sum }'
}

# cpu_ns PID… — CPU time the processes (every thread) have run, in nanoseconds
# (/proc/PID/task/*/schedstat: ns resolution, where /proc/PID/stat counts 10 ms ticks).
# Threads that have ended are not counted: compare it across a window of a long-lived server.
cpu_ns() {
  local pid total=0 task run
  for pid in "$@"; do
    for task in /proc/"$pid"/task/*/schedstat; do
      read -r run _ 2>/dev/null <"$task" || continue
      total=$((total + run))
    done
  done
  echo "$total"
}
