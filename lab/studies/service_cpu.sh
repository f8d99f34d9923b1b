#!/usr/bin/env bash
# Where the CPU goes under the service benchmark's load (docs/results/service.md): runs
# benchmarks/service_load.py (8 clients, 45 s) with CODE's src on PYTHONPATH, and prints the
# cores each Python process used between 15 s and 40 s into the run (utime + stime from
# /proc/PID/stat), then the requests per second. Usage, from the repository root:
#   bash lab/studies/service_cpu.sh CODE [service_load.py options, e.g. --workers 2]
# CODE: a checkout (this one: .; the release: a worktree of 597967c).
set -euo pipefail
CODE=$(cd "$1" && pwd); shift
PY=$(pwd)/.venv/bin/python OUT=$(mktemp -d)
(cd "$CODE" && PYTHONPATH="$CODE/src" "$PY" benchmarks/service_load.py --clients 8 \
  --duration 45 --output "$OUT/load.json" "$@" > "$OUT/load.log" 2>&1) &
ticks() {  # PID, CPU ticks so far, command line; for every Python process
  for p in $(pgrep -f python); do
    [ -r "/proc/$p/stat" ] && echo "$p $(awk '{print $14 + $15}' "/proc/$p/stat") $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-100)"
  done
}
WINDOW=25  # seconds between the two readings
sleep 15; ticks > "$OUT/a"; sleep $WINDOW; ticks > "$OUT/b"
wait
"$PY" - "$OUT" "$(getconf CLK_TCK)" $WINDOW <<'PY'
import json, sys
out, hz, window = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
before = {line.split()[0]: int(line.split()[1]) for line in open(f"{out}/a")}
for line in open(f"{out}/b"):
    pid, now, *cmd = line.split()
    if pid in before:
        print(f"{(int(now) - before[pid]) / hz / window:5.2f} cores  {' '.join(cmd)}")
print("requests/s", json.load(open(f"{out}/load.json"))["requests_per_s"])
PY
