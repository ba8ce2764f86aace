# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# procs.sh: the one way kquant's local scripts (demo.sh, cluster.sh) print
# progress and run background processes. A sourcing script sets PROCS_DIR (its
# state directory: logs/<name>.log, pids/<name>.pid) and PROCS_NAME (the prefix
# of its error messages) first.

PROCS_START=$SECONDS

step() { printf '\033[1m==> [%3ss] %s\033[0m\n' "$((SECONDS - PROCS_START))" "$*"; }
info() { printf '    %s\n' "$*"; }
die() { printf '%s: %s\n' "$PROCS_NAME" "$*" >&2; exit 1; }

running() { # name
  local pidfile=$PROCS_DIR/pids/$1.pid
  [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# start name command... : a background process in its own session, logging to
# logs/<name>.log, its pid in pids/<name>.pid; reused when it still runs.
start() {
  local name=$1
  shift
  if running "$name"; then
    info "$name already running (pid $(cat "$PROCS_DIR/pids/$name.pid"))"
    return
  fi
  mkdir -p "$PROCS_DIR/logs" "$PROCS_DIR/pids"
  setsid "$@" >"$PROCS_DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$PROCS_DIR/pids/$name.pid"
  info "$name started (pid $!, log ${PROCS_DIR#"$ROOT"/}/logs/$name.log)"
}

# stop name: SIGTERM to its process group, SIGKILL after 10 s.
stop() {
  local pidfile=$PROCS_DIR/pids/$1.pid pid i
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    info "stopped $1 (pid $pid)"
  fi
  rm -f "$pidfile"
}
