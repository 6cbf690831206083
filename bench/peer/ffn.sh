#!/usr/bin/env bash
# Kernel shapes against ggml (issue 12): the decode step of one-layer models whose weights are the
# FFN GEMVs of 4096 x 14336 (Llama-3-8B) and 896 x 4864 (Qwen2.5-0.5B), in Q8_0 and Q4_0, timed in
# Headroom (the timing probe's batch-1 decode step over the file's own blocks, median of 7 after a
# warm-up: field decode[0].step_ms) and in llama.cpp (node-llama-cpp 3.21.1's prebuilt CPU ggml,
# decode.mjs: median of RUNS runs of 15 decode steps), with one thread (both under taskset -c 0) and
# with every thread. ratio = ggml ms / Headroom ms: above 1, Headroom is faster.
# Not a kernel ratio: the probe's step reads the weights cold (it rewrites a flush buffer of 5x the
# cache before each timed run) while llama.cpp's decode loop runs them warm; the kernels against
# ggml's own kernels, same weights, one process: bench_ggml_kernels (bench_ggml_kernels.cpp).
#
#   bench/peer/ffn.sh [BUILD_DIR] [RUNS]     (defaults: build, 5); needs node and `npm ci` here
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${2:-5}
if ! command -v node >/dev/null || [ ! -d "$here/node_modules/node-llama-cpp" ]; then
  echo "SKIP: needs node and node-llama-cpp (cd bench/peer && npm ci)" >&2
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/headroom-ffn.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
mapfile -t files < <("$build/bin/bench_peer_models" write-ffn "$work")
all=$(nproc)
printf '%-26s %8s %12s %10s %8s\n' file threads headroom_ms ggml_ms ratio
for f in "${files[@]}"; do
  for t in 1 "$all"; do
    pin=(); if [ "$t" = 1 ] && command -v taskset >/dev/null; then pin=(taskset -c 0); fi
    # A timing row outside its tolerance makes the probe exit 3; the measurement is in the JSON.
    ${pin[@]+"${pin[@]}"} "$build/bin/headroom-cli" probe --device cpu --budget 2GiB --model "$f" --probes timing --json \
      >"$work/probe.json" 2>"$work/probe.log" || true
    ours=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).results[0];console.log(JSON.parse(JSON.stringify(r.decode))[0].step_ms)' "$work/probe.json")
    theirs=$(${pin[@]+"${pin[@]}"} node "$here/decode.mjs" "$runs" "$t" "$f" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(1e3/JSON.parse(s).decode_tokens_per_s))')
    node -e 'const [f,t,o,g]=process.argv.slice(1);console.log(f.padEnd(26),t.padStart(8),Number(o).toFixed(2).padStart(12),Number(g).toFixed(2).padStart(10),(Number(g)/Number(o)).toFixed(2).padStart(8))' \
      "$(basename "$f")" "$t" "$ours" "$theirs"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
