#!/usr/bin/env bash
# The timing probe's judge: Headroom's predicted decode tokens/s against llama.cpp's measured
# decode of the same GGUF files (issue 12). Needs node and `npm ci` here (node-llama-cpp 3.21.1).
#
#   bench/peer/run.sh [BUILD_DIR] [RUNS] [RUNS_ALL_THREADS]     (defaults: build, 3, 3)
#
# 1. bench_peer_models writes qwen2.5-0.5b and llama-3.2-1b shapes in Q8_0 and Q4_0 (zero weights);
# 2. the device probe measures B_read on this machine (headroom-cli probe --probes device);
# 3. Headroom predicts batch-1 decode tokens/s for each file at that B_read (core roofline);
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
gbps=$("$build/bin/headroom-cli" probe --device cpu --budget 2GiB --model qwen2.5-0.5b --probes device --json 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s).results[0];console.log(r.read_bandwidth_gbps)})')
echo "B_read (device probe): $gbps GB/s"
all=$(nproc)
printf '%-26s %8s %10s %12s %12s %12s %12s\n' file threads predicted measured ratio "" ""
for f in "${files[@]}"; do
  predicted=$("$build/bin/bench_peer_models" predict "$f" "$gbps" 16 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).predicted_tokens_per_s))')
  for t in 1 "$all"; do
    r=$runs; [ "$t" = 1 ] || r=$runsAll
    measured=$(node "$here/decode.mjs" "$r" "$t" "$f" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).decode_tokens_per_s))')
    node -e 'const [f,t,p,m]=process.argv.slice(1);console.log(f.padEnd(26),t.padStart(8),Number(p).toFixed(2).padStart(10),Number(m).toFixed(2).padStart(12),(Number(p)/Number(m)).toFixed(2).padStart(12))' \
      "$(basename "$f")" "$t" "$predicted" "$measured"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
