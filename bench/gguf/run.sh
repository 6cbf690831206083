#!/usr/bin/env bash
# GGUF import benchmark: Headroom (bench_gguf_import) vs @huggingface/gguf (peer.mjs) on every
# GGUF fixture and on a sparse 42.9 GB file with a small header. Prints a Markdown table for
# bench/RESULTS.md ("## GGUF import"). One process per (tool, file): peak RSS is per file.
#   bench/gguf/run.sh [RUNS]     (default 20; needs `npm install` in bench/gguf once)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-20}
BUILD=${BENCH_BUILD:-build-bench-gguf}
FIXTURES=$(realpath "${FIXTURES:-../shared/fixtures}")
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADROOM_BUILD_GUI=OFF \
    -DHEADROOM_WITH_CUDA=OFF -DBUILD_TESTING=OFF -DHEADROOM_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$BUILD" -j2 --target bench_gguf_import >/dev/null || [ -x "$BUILD/bin/bench_gguf_import" ]
[ -d bench/gguf/node_modules/@huggingface/gguf ] || (cd bench/gguf && npm install --no-audit --no-fund >/dev/null)
SPARSE=$(mktemp -d)/sparse-42.9GB.gguf
"$BUILD/bin/bench_gguf_import" --make-sparse "$SPARSE"
trap 'rm -f "$SPARSE"' EXIT
NODE_BASE=$(node -e 'const m=/VmHWM:\s+(\d+)/.exec(require("fs").readFileSync("/proc/self/status","utf8"));console.log(m[1])')
echo "| file | bytes | tensors | Headroom median ms | peer median ms | peer / Headroom | Headroom peak RSS KiB | peer peak RSS KiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for f in "$FIXTURES"/gguf/*.gguf "$SPARSE"; do
  h=$("$BUILD/bin/bench_gguf_import" "$f" "$RUNS")
  p=$(cd bench/gguf && node peer.mjs "$f" "$RUNS")
  python3 - "$f" "$h" "$p" <<'PY'
import json, os, sys
f, h, p = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ratio = p["median_ms"] / h["median_ms"] if h["median_ms"] > 0 else float("nan")
note = "" if h["tensors"] == p["tensors"] else " (tensor counts differ!)"
print(f"| {os.path.basename(f)} | {os.path.getsize(f):,} | {h['tensors']} | {h['median_ms']:.3f} | {p['median_ms']:.3f} | {ratio:.1f}x{note} | {h['peak_rss_kib']:,} | {p['peak_rss_kib']:,} |")
PY
done
echo
echo "Node baseline (empty process) peak RSS: ${NODE_BASE} KiB."
