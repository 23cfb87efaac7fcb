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

