#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time, one at a time, with
# its dictionary (fuzz/dict/) and a corpus seeded from this checkout (profiles/, the golden
# report, small GGUF and safetensors headers written here) and from ../shared/fixtures when present.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#     SECONDS_PER_TARGET  default 600 (scripts/test.sh runs 10)
#     TARGET              fuzz_gguf fuzz_safetensors fuzz_hfconfig fuzz_profile fuzz_calibration
#                         fuzz_report_check fuzz_engine_log
#                         (default: all)
# Environment: FUZZ_BUILD (default build-fuzz), FIXTURES (default $HEADROOM_FIXTURES_DIR, else
#   ../shared/fixtures), FUZZ_WORK (default .: corpora grow in $FUZZ_WORK/fuzz-corpus/<target>,
#   crashes land in $FUZZ_WORK/fuzz-artifacts/<target>/; both git-ignored), FUZZ_BIN (a folder of
#   already built targets: nothing is built; default $FUZZ_BUILD/bin, built first). One process at
#   a time: the machine is shared.
# Exit 1 if a target crashed, leaked, timed out, ran out of memory or exited non-zero for any
#   other reason (a fuzzer that cannot start counts too): each failure is named on stderr as
#   "fuzz: FAILED TARGET (exit N): crash file PATH" (or "no crash file written" and its log), and
#   the last line lists the targets that failed. tests/cli/fuzzscript.sh checks this.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(fuzz_gguf fuzz_safetensors fuzz_hfconfig fuzz_profile fuzz_calibration fuzz_report_check fuzz_engine_log)
BUILD=${FUZZ_BUILD:-build-fuzz}
FIXTURES=${FIXTURES:-${HEADROOM_FIXTURES_DIR:-../shared/fixtures}}
WORK=${FUZZ_WORK:-.}

BIN=${FUZZ_BIN:-}
if [ -z "$BIN" ]; then
  BIN=$BUILD/bin
  if [ ! -f "$BUILD/build.ninja" ]; then
    # -O1 without debug info: half the compile time of RelWithDebInfo, as thorough for fuzzing.
    CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
      -DHEADROOM_BUILD_FUZZ=ON -DHEADROOM_BUILD_GUI=OFF -DHEADROOM_BUILD_BENCH=OFF \
      -DHEADROOM_WITH_CUDA=OFF -DBUILD_TESTING=OFF ${FUZZ_CMAKE_ARGS:-} >/dev/null
  fi
  cmake --build "$BUILD" -j2 --target "${TARGETS[@]}"
fi

# A GGUF header (lax mode byte first: 1 TiB of tensor data assumed) with an architecture, one
# KV per line of the key table, and one tensor info; written with printf, no binary committed.
gguf_seed() { # mode-byte -> stdout
  local le8='\000\000\000\000\000\000\000'
  printf "$1"'GGUF\003\000\000\000\001'"$le8"'\003'"$le8"
  printf '\024'"$le8"'general.architecture\010\000\000\000\005'"$le8"'llama'
  printf '\021'"$le8"'llama.block_count\004\000\000\000\002\000\000\000'
  printf '\026'"$le8"'llama.embedding_length\004\000\000\000\000\001\000\000'
  printf '\021'"$le8"'token_embd.weight\002\000\000\000\000\001\000\000\000\000\000\000\004'"$le8"'\000\000\000\000'"$le8"'\000'
}

# A safetensors file (mode byte first) of one F16 tensor.
safetensors_seed() {
  local json='{"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]}}'
  printf '\000'"\\$(printf %03o ${#json})"'\000\000\000\000\000\000\000%s\000\000\000\000\000\000\000\000' "$json"
}

seed() { # target -> corpus dir
  local t=$1 dir=$WORK/fuzz-corpus/$1
  mkdir -p "$dir"
  # the small corpus kept in the repo (inputs that reach past the first checks; fuzz/corpus/README.md)
  if [ -d "fuzz/corpus/$t" ]; then cp -n fuzz/corpus/"$t"/* "$dir/" 2>/dev/null || true; fi
  case $t in
    fuzz_gguf)
      gguf_seed '\001' > "$dir/seed-llama-lax"
      gguf_seed '\000' > "$dir/seed-llama-exact"
      if [ -d "$FIXTURES/gguf" ]; then
        for f in "$FIXTURES"/gguf/*.gguf; do
          { printf '\x01'; head -c 65536 "$f"; } > "$dir/seed-lax-$(basename "$f")"
        done
      fi ;;
    fuzz_safetensors)
      safetensors_seed > "$dir/seed-small" ;;
    fuzz_hfconfig)
      printf '{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":256,"max_position_embeddings":2048}' > "$dir/seed-llama"
      if [ -d "$FIXTURES/hf" ]; then
        for f in "$FIXTURES"/hf/*/config.json; do
          cp "$f" "$dir/seed-$(basename "$(dirname "$f")")-config.json"
        done
      fi ;;
    fuzz_profile)
      # first byte: 0 models, 1 cards, 2 engines
      local i=0
      for kind in models cards engines; do
        for f in $(ls profiles/$kind/*.json | head -3); do
          { printf "\\00$i"; cat "$f"; } > "$dir/seed-$kind-$(basename "$f")"
        done
        i=$((i + 1))
      done ;;
    fuzz_calibration)
      # what `log --save` writes (calibrationToJson), whole and with each optional block alone
      local head='"schema_version": 1, "card": "rtx-4090", "card_total_bytes": 25390809088, "engine": "vllm", "engine_version": "0.19.0", "model": "llama-3.1-8b", "log": "serve.log", "log_hash": "0123abcd", "ubatch_tokens": 2048'
      printf '{%s, "measured": {"activation_peak_bytes": 1073741824, "runtime_bytes": 536870912, "cuda_graph_bytes": 268435456}, "model_independent": {"non_torch_bytes": 134217728, "card_free_bytes": 24696061952}}\n' "$head" > "$dir/seed-whole.json"
      printf '{%s, "measured": {"activation_peak_bytes": 1073741824}, "model_independent": {}}\n' "$head" > "$dir/seed-measured.json"
      printf '{%s, "measured": {}, "model_independent": {"non_torch_bytes": 134217728}}\n' "$head" | sed 's/llama-3.1-8b/qwen2.5-7b/' > "$dir/seed-other-model.json" ;;
    fuzz_report_check)
      cp tests/data/golden/report.json "$dir/seed-golden-report.json" ;;
    fuzz_engine_log)
      # the logs quoted by the engine-log corpus (tests/data/engine-logs/*.json, key "log")
      for f in tests/data/engine-logs/*.json; do
        sed -n 's/^ *"log": "\(.*\)",\{0,1\}$/\1/p' "$f" | sed 's/\\n/\n/g; s/\\"/"/g' > "$dir/seed-$(basename "$f" .json)"
      done ;;
  esac
  echo "$dir"
}

dict_of() {
  case $1 in
    fuzz_gguf) echo fuzz/dict/gguf.dict ;;
    fuzz_engine_log) echo fuzz/dict/enginelog.dict ;;
    fuzz_calibration) echo fuzz/dict/calibration.dict ;;
    *) echo fuzz/dict/json.dict ;;
  esac
}

status=0
failed=()
for t in "${TARGETS[@]}"; do
  corpus=$(seed "$t")
  artifacts=$WORK/fuzz-artifacts/$t
  log=$artifacts/last-run.log
  mkdir -p "$artifacts"
  echo "=== $t: ${SECONDS_PER_TARGET}s, corpus $corpus ($(ls "$corpus" | wc -l) inputs), dictionary $(dict_of "$t")"
  # The fuzzer's own exit status decides (0 only when it ran its time without a finding); the log
  # is read for the figures and for the file libFuzzer wrote the failing input to.
  rc=0
  "$BIN/$t" "$corpus" -dict="$(dict_of "$t")" -max_total_time="$SECONDS_PER_TARGET" -max_len=131072 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" > "$log" 2>&1 || rc=$?
  grep -E "^(Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)|ERROR|SUMMARY|Test unit written" "$log" || true
  if [ "$rc" -ne 0 ] || grep -q -E "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error|Test unit written" "$log"; then
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    if [ -n "$crash" ]; then
      echo "fuzz: FAILED $t (exit $rc): crash file $crash (log $log)" >&2
    else
      echo "fuzz: FAILED $t (exit $rc): no crash file written, see $log" >&2
      tail -5 "$log" >&2
    fi
    failed+=("$t")
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#TARGETS[@]} targets failed: ${failed[*]}" >&2
else
  echo "fuzz: ${#TARGETS[@]} targets ran ${SECONDS_PER_TARGET} s each without a finding"
fi
exit $status
