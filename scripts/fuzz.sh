#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time, one at a time,
# seeded with the real model files of ../shared/fixtures (and small generated safetensors).
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#     SECONDS_PER_TARGET  default 600
#     TARGET              fuzz_gguf fuzz_safetensors fuzz_hfconfig (default: all three)
# Environment: FUZZ_BUILD (default build-fuzz), FIXTURES (default ../shared/fixtures),
#   FUZZ_JOBS unused (one process: the machine is shared). Corpora grow in fuzz-corpus/<target>,
#   crashes land in fuzz-artifacts/<target>/ (both git-ignored). Exit 1 if a target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(fuzz_gguf fuzz_safetensors fuzz_hfconfig)
BUILD=${FUZZ_BUILD:-build-fuzz}
FIXTURES=${FIXTURES:-../shared/fixtures}

if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHEADROOM_BUILD_FUZZ=ON -DHEADROOM_BUILD_GUI=OFF -DHEADROOM_BUILD_BENCH=OFF \
    -DHEADROOM_WITH_CUDA=OFF -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$BUILD" -j2 --target "${TARGETS[@]}" || [ -n "${FUZZ_NO_BUILD:-}" ]

seed() { # target -> seed dir
  local t=$1 dir=fuzz-corpus/$1
  mkdir -p "$dir"
  case $t in
    fuzz_gguf)
      # first byte of each input is the harness's mode flag (0 = exact size, 1 = lax)
      if [ -d "$FIXTURES/gguf" ]; then
        for f in "$FIXTURES"/gguf/*.gguf; do
          { printf '\x00'; head -c 65536 "$f"; } > "$dir/seed-exact-$(basename "$f")"
          { printf '\x01'; head -c 65536 "$f"; } > "$dir/seed-lax-$(basename "$f")"
        done
      fi ;;
    fuzz_safetensors)
      python3 - "$dir" <<'PY'
import json, struct, sys, os
d = sys.argv[1]
def st(name, tensors, meta=None, pad=True):
    h, off = {}, 0
    if meta: h["__metadata__"] = meta
    for n, (dt, shape, size) in tensors.items():
        count = 1
        for s in shape: count *= s
        nb = count * size
        h[n] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    j = json.dumps(h).encode()
    data = struct.pack("<Q", len(j)) + j + b"\0" * off
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"\x00" + data)
st("seed-small", {"w": ("F16", [4, 8], 2), "b": ("F32", [8], 4)}, {"format": "pt"})
st("seed-bf16", {"model.embed_tokens.weight": ("BF16", [16, 8], 2), "model.norm.weight": ("BF16", [8], 2),
                 "model.layers.0.self_attn.rotary_emb.inv_freq": ("F32", [4], 4)})
st("seed-int", {"q": ("I32", [2, 2], 4), "z": ("U8", [3], 1), "e": ("F8_E4M3", [0], 1)})
PY
      ;;
    fuzz_hfconfig)
      if [ -d "$FIXTURES/hf" ]; then
        for f in "$FIXTURES"/hf/*/*.json; do
          cp "$f" "$dir/seed-$(basename "$(dirname "$f")")-$(basename "$f")"
        done
      fi ;;
  esac
  echo "$dir"
}

status=0
for t in "${TARGETS[@]}"; do
  corpus=$(seed "$t")
  mkdir -p "fuzz-artifacts/$t"
  echo "=== $t: ${SECONDS_PER_TARGET}s, corpus $corpus"
  if ! "$BUILD/bin/$t" "$corpus" -max_total_time="$SECONDS_PER_TARGET" -max_len=131072 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$t/" 2>&1 | tee "fuzz-artifacts/$t/last-run.log" | grep -E "^(#[0-9]+ +(DONE|pulse))|stat::|ERROR|SUMMARY|Test unit written"; then
    :
  fi
  if grep -q -E "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error" "fuzz-artifacts/$t/last-run.log"; then
    echo "!!! $t found a failure: see fuzz-artifacts/$t/"
    status=1
  fi
done
exit $status
