#!/usr/bin/env bash
# The GPU check (TOOLCHAIN.md §11), run on the GPU machine, which has CUDA, CMake and Ninja but
# no Debian packages: the header-only dependencies must already be in .deps/include (run
# scripts/copy-deps.sh on a Debian machine and bring .deps along).
#
#   scripts/gpu-check.sh LOG_DIR
#
# Configures a Release build without the GUI for the chip there (sm_90, CUDA required), builds
# it, runs the GPU-labelled tests (ctest -L gpu: kernels, including the KV cache write and the
# fp32 -> fp16 conversion of the decode step, and probes), the CPU probe tests, the probe command on
# cuda:0 under 8/16/24 GiB budgets (qwen2.5-0.5b, JSON into LOG_DIR, progress in the .log beside
# it), the q8_0 and q4_0 GGUF weight types on cuda:0 (allocation + timing), `report --check` over
# the 24 GiB probe document (its verdicts re-checked), and the CUDA kernel benchmarks (every
# format, the GGML block types included), writes the full
# logs to LOG_DIR and prints a short table last. Exit status: 0 when every step passed, else 1.
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 LOG_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
logs=$(cd "$1" && pwd)
build="${HEADROOM_GPU_BUILD_DIR:-$root/build-gpu}"
jobs=$(nproc 2>/dev/null || echo 4)
arch="${HEADROOM_CUDA_ARCH:-90}"

declare -a rows=()
failed=0
# step NAME LOGFILE COMMAND...: runs the command with its output in LOGFILE, records the row.
step() {
  local name=$1 log=$2
  shift 2
  local start end rc
  start=$(date +%s)
  "$@" >"$logs/$log" 2>&1
  rc=$?
  end=$(date +%s)
  local verdict=PASS
  if [ "$rc" -ne 0 ]; then verdict="FAIL (exit $rc)"; failed=1; fi
  rows+=("$(printf '%-22s %-16s %5ss  %s' "$name" "$verdict" "$((end - start))" "$log")")
  echo "== $name: $verdict ($((end - start)) s, $logs/$log)"
  return "$rc"
}

# --- machine facts ---
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi 2>&1 || echo "nvidia-smi not available"
  command -v nvcc >/dev/null && nvcc --version || /usr/local/cuda/bin/nvcc --version
  cmake --version | head -1
  nproc
} >"$logs/machine.log" 2>&1

if [ ! -f "$root/.deps/include/catch2/catch.hpp" ] || [ ! -f "$root/.deps/include/nlohmann/json.hpp" ]; then
  echo "gpu-check: $root/.deps/include is missing; run scripts/copy-deps.sh on a Debian machine and bring .deps along" >&2
  exit 1
fi

cuda_args=()
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

step configure configure.log \
  cmake -S "$root" -B "$build" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release \
    -DHEADROOM_DEPS_INCLUDE=.deps/include -DHEADROOM_BUILD_GUI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DHEADROOM_REQUIRE_CUDA=ON ${cuda_args[@]+"${cuda_args[@]}"}
configured=$?

if [ "$configured" -eq 0 ]; then
  # Everything first; if another part of the tree does not build, still build and check the kernels.
  if ! step build build.log cmake --build "$build" -j "$jobs"; then
    step "build (kernels only)" build-kernels.log \
      cmake --build "$build" -j "$jobs" --target tst_kernels_ref tst_kernels_cuda bench_kernels_cuda
  fi
  step "ctest -L gpu" ctest-gpu.log \
    ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error
  # Skipped (exit 77 = no usable GPU) counts as passed for CTest: say it in the table.
  if grep -q "Skipped" "$logs/ctest-gpu.log"; then
    rows+=("$(printf '%-22s %-16s' "  (gpu tests)" "SKIPPED: no usable GPU")")
    failed=1
  fi
  step "ctest kernels (CPU)" ctest-kernels.log \
    ctest --test-dir "$build" -L kernels -LE gpu --output-on-failure --no-tests=error
  step "ctest probes (CPU)" ctest-probes.log \
    ctest --test-dir "$build" -L probes -LE gpu --output-on-failure --no-tests=error
  # The probes on the GPU, emulating 8/16/24 GB cards with a budget cap (one JSON document each).
  if [ -x "$build/bin/headroom-cli" ]; then
    # JSON on stdout, progress lines on stderr (kept apart so the JSON file stays parseable).
    for budget in 8GiB 16GiB 24GiB; do
      step "probe cuda:0 $budget" "probe-cuda-$budget.log" \
        bash -c '"$1" probe --device cuda:0 --budget "$2" --model qwen2.5-0.5b --json >"$3"' _ \
        "$build/bin/headroom-cli" "$budget" "$logs/probe-cuda-$budget.json"
    done
    # GGUF weight types run as stored (q8_0, q4_0 block kernels): allocation and timing at 8 GiB.
    for w in q8_0 q4_0; do
      step "probe cuda:0 $w" "probe-cuda-$w.log" \
        bash -c '"$1" probe --device cuda:0 --budget 8GiB --model qwen2.5-0.5b -w "$2" --probes allocation,timing --json >"$3"' _ \
        "$build/bin/headroom-cli" "$w" "$logs/probe-cuda-$w.json"
    done
    # The verdicts of the probe document re-checked by report --check (core/probeverdict.h rules):
    # the allocation exact, the limit within one block or 1 % and never above, every timing row's
    # verdict from its own measured and calibrated-predicted times.
    step "report --check probes" report-check-probes.log \
      bash -c '"$1" report -m qwen2.5-0.5b -c 24GiB --probes "$2" -o "$3" && "$1" report --check "$3"' _ \
      "$build/bin/headroom-cli" "$logs/probe-cuda-24GiB.json" "$logs/report-probes.json"
  else
    rows+=("$(printf '%-22s %-16s' "probe cuda:0" "NOT BUILT")")
    failed=1
  fi
  if [ -x "$build/bin/bench_kernels_cuda" ]; then
    step "bench_kernels_cuda" bench-kernels-cuda.log "$build/bin/bench_kernels_cuda"
  else
    rows+=("$(printf '%-22s %-16s' bench_kernels_cuda "NOT BUILT")")
    failed=1
  fi
fi

echo
echo "Headroom GPU check, logs in $logs"
printf '%-22s %-16s %6s  %s\n' step result time log
for row in "${rows[@]}"; do echo "$row"; done
if [ -f "$logs/ctest-gpu.log" ]; then
  grep -E "tests passed|tests failed" "$logs/ctest-gpu.log" | tail -1
fi
# One line per emulated card: allocation (formula vs allocator vs driver), limit (predicted vs
# verified tokens), context overhead, B_copy and TPOT from the probe JSON.
for budget in 8GiB 16GiB 24GiB; do
  f="$logs/probe-cuda-$budget.json"
  [ -s "$f" ] || continue
  python3 - "$f" "$budget" <<'PY' 2>/dev/null || grep -E '"(predicted|verified|measured)_(bytes|tokens)"' "$f"
import json, sys
doc = json.load(open(sys.argv[1]))
r = {x["probe"]: x for x in doc["results"]}
d, a, l, t = r.get("device", {}), r.get("allocation", {}), r.get("limit", {}), r.get("timing", {})
print(f"probe {sys.argv[2]:>5}: pass={doc.get('pass')} alloc {a.get('predicted_bytes')}/{a.get('measured_bytes')} B "
      f"(driver {a.get('driver_measured_bytes')}), limit {l.get('verified_tokens')}/{l.get('predicted_tokens')} tokens, "
      f"context {d.get('context_overhead_bytes')} B, B_copy {d.get('copy_bandwidth_gbps', 0):.0f} GB/s, "
      f"TPOT {t.get('tpot_ms', 0):.3f} ms, knee {t.get('knee_batch')}")
PY
done
if [ -f "$logs/bench-kernels-cuda.log" ]; then
  echo
  # B_copy line and the kernel table (median us, GB/s, fraction of B_copy, speed-up, CV)
  grep -E "^(device|B_copy|kernel |cublas|fp16|int8|int4|nf4|q8_0|q4_0|q4_K|q6_K|attn)" "$logs/bench-kernels-cuda.log"
fi
exit "$failed"
