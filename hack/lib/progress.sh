# Copyright 2026 The kquant Authors.
# SPDX-License-Identifier: Apache-2.0

# shellcheck shell=bash
# progress.sh: the one way kquant's scripts keep a long step from going silent.
# A step that can take minutes (a cold Go build, the test suite) first says what
# it builds, why and about how long it takes, then prints a progress line at
# least every PROGRESS_TICK seconds while it works: packages compiled of the
# total for a Go build, otherwise the time elapsed whenever the command itself
# has printed nothing for that long. Everything goes to stderr, so that scripts
# that print a result on stdout (hack/envtest-assets.sh) keep it clean.
#
# Sourced by envtest-assets.sh (through assets.sh), cluster-assets.sh, demo.sh
# and the Makefile's test target; nothing here runs on its own.

PROGRESS_TICK=${KQUANT_PROGRESS_TICK:-15}

progress_say() { printf '    %s\n' "$*" >&2; }

# progress_elapsed seconds: "45s" or "3m05s".
progress_elapsed() {
  local s=$1
  if ((s < 60)); then printf '%ds' "$s"; else printf '%dm%02ds' $((s / 60)) $((s % 60)); fi
}

# progress_intro what why estimate: the first line of a long step, printed only
# when the step really has work to do (a cold cache, a first run).
progress_intro() {
  progress_say "$1: $2; about $3 (a line every ${PROGRESS_TICK}s until it is done)"
}

# progress_parallel_ok succeeds when the machine has the cores for two builds
# side by side: go build already uses every core, so two builds on a small
# machine only compete, while on four cores or more one build's serial phases
# (resolving modules, linking a large binary) leave cores to the other.
# KQUANT_BUILD_PARALLEL=0 or 1 decides instead.
progress_parallel_ok() {
  case ${KQUANT_BUILD_PARALLEL:-} in
    0) return 1 ;;
    1) return 0 ;;
  esac
  (($(nproc 2>/dev/null || echo 1) >= 4))
}

# progress_go_build label build-flags... -- packages...: go build -v in the
# current directory, with a line every PROGRESS_TICK seconds that counts the
# packages compiled so far against every package the build depends on (the
# standard library included: a cold cache compiles it too, and a warm one skips
# most packages, so the count is an upper bound). The build's own messages are
# printed when it fails.
progress_go_build() {
  local label=$1
  shift
  local flags=() pkgs=() listflags=() seen_sep=0 a skip=0
  for a in "$@"; do
    if ((seen_sep)); then pkgs+=("$a"); continue; fi
    [[ $a == -- ]] && { seen_sep=1; continue; }
    flags+=("$a")
  done
  # go list takes the build flags that change the package graph, not -o.
  for a in "${flags[@]}"; do
    if ((skip)); then skip=0; continue; fi
    case $a in
      -o) skip=1 ;;
      -o=*) ;;
      *) listflags+=("$a") ;;
    esac
  done
  local total log rc
  total=$(go list -deps "${listflags[@]}" "${pkgs[@]}" 2>/dev/null | wc -l) || total="?"
  log=$(mktemp)
  go build -v "${flags[@]}" "${pkgs[@]}" 2>"$log" &
  progress_watch $! "$label" "$log" "$total" && rc=0 || rc=$?
  if ((rc != 0)); then
    grep -Ev '^[[:alnum:]_.~/-]+$' "$log" >&2 || true
  fi
  rm -f "$log"
  return "$rc"
}

# progress_run label command...: runs the command with its output passed
# through, and prints "label: still running, <elapsed>" whenever the command
# has been silent for PROGRESS_TICK seconds.
progress_run() {
  local label=$1
  shift
  local log rc
  log=$(mktemp)
  "$@" > >(tee -a "$log") 2> >(tee -a "$log" >&2) &
  progress_watch $! "$label" "$log" "" && rc=0 || rc=$?
  rm -f "$log"
  return "$rc"
}

# progress_watch pid label log total: waits for pid, a child of this shell, and
# returns its exit status. With a total it counts the log's package lines
# (go build -v) every tick; without one it ticks only when the log stopped
# growing for a whole tick.
progress_watch() {
  local pid=$1 label=$2 log=$3 total=$4
  local start=$SECONDS next=$((SECONDS + PROGRESS_TICK)) size last_size=0 compiled
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ((SECONDS >= next)) || continue
    next=$((SECONDS + PROGRESS_TICK))
    if [[ -n $total ]]; then
      compiled=$(grep -cE '^[[:alnum:]_.~/-]+$' "$log" || true)
      progress_say "$label: $compiled packages compiled of at most $total, $(progress_elapsed $((SECONDS - start)))"
      continue
    fi
    size=$(stat -c %s "$log" 2>/dev/null || echo 0)
    if [[ $size == "$last_size" ]]; then
      progress_say "$label: still running, $(progress_elapsed $((SECONDS - start)))"
    fi
    last_size=$size
  done
  wait "$pid"
}
