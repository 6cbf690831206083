#!/usr/bin/env bash
# The timing probe's judge: Headroom's predicted decode tokens/s against llama.cpp's measured
# decode of the same GGUF files (issue 12). Needs node and `npm ci` here (node-llama-cpp 3.21.1).
#
#   bench/peer/run.sh [BUILD_DIR] [RUNS] [RUNS_ALL_THREADS]     (defaults: build, 3, 3)
#
# 1. bench_peer_models writes qwen2.5-0.5b and llama-3.2-1b shapes in Q8_0 and Q4_0 (zero weights);
# 2. per file and thread count, Headroom's timing probe runs that file's decode step as stored
#    (the GGML q8_0/q4_0 block kernels) and calibrates the speed model: its decode bandwidth is
#    the batch-1 step's bytes / measured time (headroom-cli probe --probes timing, field
#    calibrated_bandwidth_gbps); the one-thread rows run both the probe and llama.cpp under
#    `taskset -c 0` (the CPU kernels take their thread count from the affinity mask);
# 3. Headroom predicts batch-1 decode tokens/s for the file at that calibrated bandwidth (the core
#    roofline, speed/roofline.h, with the file's exact tensor bytes);
# 4. decode.mjs measures llama.cpp's decode with 1 thread and with every thread (median of RUNS);
# 5. a table of predicted / measured, with the machine load before and after.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${2:-3}
runsAll=${3:-$runs}
if ! command -v node >/dev/null || [ ! -d "$here/node_modules/node-llama-cpp" ]; then
  echo "SKIP: needs node and node-llama-cpp (cd bench/peer && npm ci)" >&2
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/headroom-peer.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
mapfile -t files < <("$build/bin/bench_peer_models" write "$work")
all=$(nproc)
# calibrated FILE THREADS: the timing probe's calibrated decode bandwidth (GB/s) for FILE.
calibrated() {
  local pin=()
  if [ "$2" = 1 ] && command -v taskset >/dev/null; then pin=(taskset -c 0); fi
  # A timing row outside its tolerance makes the probe exit 3; the calibration is still in the JSON.
  ${pin[@]+"${pin[@]}"} "$build/bin/headroom-cli" probe --device cpu --budget 2GiB --model "$1" --probes timing --json \
    >"$work/probe.json" 2>"$work/probe.log" || true
  node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).results[0];console.log(r.calibrated_bandwidth_gbps)' \
    "$work/probe.json"
}
printf '%-26s %8s %14s %10s %12s %8s\n' file threads calibrated_GBps predicted measured ratio
for f in "${files[@]}"; do
  for t in 1 "$all"; do
    gbps=$(calibrated "$f" "$t")
    predicted=$("$build/bin/bench_peer_models" predict "$f" "$gbps" 16 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).predicted_tokens_per_s))')
    r=$runs; [ "$t" = 1 ] || r=$runsAll
    pin=(); if [ "$t" = 1 ] && command -v taskset >/dev/null; then pin=(taskset -c 0); fi
    measured=$(${pin[@]+"${pin[@]}"} node "$here/decode.mjs" "$r" "$t" "$f" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).decode_tokens_per_s))')
    node -e 'const [f,t,g,p,m]=process.argv.slice(1);console.log(f.padEnd(26),t.padStart(8),Number(g).toFixed(3).padStart(14),Number(p).toFixed(2).padStart(10),Number(m).toFixed(2).padStart(12),(Number(p)/Number(m)).toFixed(2).padStart(8))' \
      "$(basename "$f")" "$t" "$gbps" "$predicted" "$measured"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
