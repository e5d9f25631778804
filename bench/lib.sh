# Shared by the benchmark scripts (sourced; each script defines its own say and die first).

# wait_port <log> <regex whose last field is the port> <pid>: prints the port a server announced in its
# log, or dies when the server exits first or nothing is announced within 120 s.
wait_port() {
  local log=$1 pattern=$2 pid=$3 port=
  for _ in $(seq 1 1200); do
    port=$(grep -oE "$pattern" "$log" | head -n1 | grep -oE '[0-9]+$' || true)
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || {
      cat "$log" >&2
      die "a server exited during startup ($log)"
    }
    sleep 0.1
  done
  [[ -n $port ]] || die "no port announced in $log within 120 s"
  echo "$port"
}

# The one server a script starts (server_pid=$!), stopped with SIGTERM by stop_server (also at EXIT).
server_pid=
stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
