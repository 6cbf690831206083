#!/usr/bin/env bash
# Runs every example command of README.md (the blocks "What it answers" and "From what you
# already have") and checks that its output answers the question: exit code 0, a table with at
# least one cell that fits, a verdict for a plan (the layer split for --offload, the settings for
# --set), speed only for a plan that loads, a written report, launch flags, a compared log and its
# saved calibration, the local stores' models. The second block's placeholders become the corpus
# log (tests/data/engine-logs), a home folder of stores built from the fixtures (make-stores.sh)
# and a loopback hub (tests/remote/rangeserver.py); nothing leaves 127.0.0.1.
#   readmeexamples.sh README BIN_DIR FIXTURES_DIR SCRATCH_DIR
set -uo pipefail
readme=$1 bin=$2 fixtures=$3 scratch=$4
src=$(cd "$(dirname "$readme")" && pwd)
mkdir -p "$scratch" && cd "$scratch" || exit 1
failures=0 ran=0
fail() { echo "FAIL: $1"; echo "$2" | head -40; failures=$((failures + 1)); }

check() { # COMMAND OUTPUT
  local cmd=$1 out=$2
  case "$cmd" in
  *" table"*)
    # A cell that fits as asked: a bare number (not "N (limit)", not "no: ...").
    if ! echo "$out" | sed -E 's/[0-9][0-9,]* \([^)]*\)//g' | grep -Eq ' [0-9][0-9,]*( {2,}|$)'; then
      fail "$cmd: no cell fits" "$out"
    fi ;;
  *" plan "*"--json"*) grep -q '"verdict"' <<<"$out" || fail "$cmd: no verdict" "$out" ;;
  *" plan "*)
    echo "$out" | grep -Eq '^  verdict +(fits|fits with less|partial offload|CPU only|does not fit)$' || fail "$cmd: no verdict" "$out"
    case "$cmd" in
    *"--offload "*)
      n=$(sed -E 's/.*--offload ([0-9]+).*/\1/' <<<"$cmd")
      grep -Eq "partial offload: $n/[0-9]+ layers on the GPU" <<<"$out" || fail "$cmd: no layer split of $n layers" "$out" ;;
    esac
    # The Settings line, wrapped at 100 columns: its continuation lines are indented.
    settings=$(sed -n '/^Settings /,/^          (\*/p' <<<"$out" | tr '\n' ' ')
    for kv in $(grep -oE -- '--set [^ ]+' <<<"$cmd" | cut -d' ' -f2); do
      grep -Eq " $kv( |$)" <<<"$settings" || fail "$cmd: setting $kv not applied" "$out"
    done
    awk 'length > 100 && /^(Settings|          )/ { bad = 1 } END { exit bad }' <<<"$out" || fail "$cmd: a Settings line over 100 columns" "$out"
    # A setting that does not ask the question leaves the question of every face.
    case "$cmd" in *"--set "*) case "$cmd" in *--context*|*--users*|*max-model-len*|*ctx-size*|*num_ctx*) ;; *)
      grep -Eq '^  asked +4 users x 8,192 tokens$' <<<"$out" || fail "$cmd: not the default question" "$out" ;; esac ;; esac ;;
  *" log "*)
    grep -q 'Predicted against measured' <<<"$out" || fail "$cmd: no comparison" "$out"
    grep -q 'Saved the calibration to ' <<<"$out" || fail "$cmd: calibration not saved" "$out"
    ls "$home"/.config/headroom/profiles/calibrations/*.json >/dev/null 2>&1 || fail "$cmd: no calibration file" "$out" ;;
  *" models --local"*) grep -Eq '^[1-9][0-9]* model\(s\)' <<<"$out" || fail "$cmd: no local model" "$out" ;;
  *" speed "*)
    grep -q 'TPOT at' <<<"$out" || fail "$cmd: no speed" "$out"
    grep -q 'does not fit' <<<"$out" && fail "$cmd: speed for a plan that does not fit" "$out" ;;
  *" frontier "*) echo "$out" | grep -Eq 'users +max context' || fail "$cmd: no frontier" "$out" ;;
  *" inspect "*) grep -q '"format"' <<<"$out" || fail "$cmd: no import" "$out" ;;
  *" probe "*) echo "$out" | grep -Eq 'all probes passed|no probe failed' || fail "$cmd: probes did not pass" "$out" ;;
  *" report "*)
    if [ -x "$bin/headroom-render" ]; then
      head -c 5 capacity.pdf | grep -q '%PDF-' || fail "$cmd: no PDF written" "$out"
    fi ;;
  *" flags "*) grep -q 'vllm serve' <<<"$out" || fail "$cmd: no launch command" "$out" ;;
  *) grep -q '^id ' <<<"$out" || fail "$cmd: no listing" "$out" ;;
  esac
}

examples=$(sed -n '/^## What it answers/,/^```$/p' "$readme" | grep '^build/bin/headroom-cli ')
local_examples=$(sed -n '/^## From what you already have/,/^```$/p' "$readme" | grep '^headroom-cli ')
[ -n "$examples" ] || { echo "FAIL: no examples found in $readme"; exit 1; }
[ -n "$local_examples" ] || { echo "FAIL: no 'From what you already have' examples found in $readme"; exit 1; }

# The second block's world: a home with a hub cache, an Ollama store and an LM Studio folder; the
# corpus log as serve.log; a loopback hub serving a GGUF repo for hf://ORG/NAME:QUANT.
home=$scratch/home
rm -rf "$scratch/remote-cache"
server_pid=
if [ -e "$fixtures/gguf/stories260K.gguf" ] && [ -e "$fixtures/hf/Llama-2-7b-hf/config.json" ]; then
  sh "$src/tests/cli/make-stores.sh" "$fixtures" "$home" || exit 1
  python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["log"]))' \
    "$src/tests/data/engine-logs/vllm-0.19-llama-3.1-8b-h100-ctx8192.json" > serve.log || exit 1
  mkdir -p hub-root/hub/ggml-org/stories260K-GGUF
  cp "$fixtures/gguf/stories260K.gguf" hub-root/hub/ggml-org/stories260K-GGUF/stories260K-Q4_K_M.gguf
  rm -f endpoint
  python3 -c 'import sys, time; sys.path.insert(0, sys.argv[1]); import rangeserver
_, base = rangeserver.start(sys.argv[2]); open("endpoint", "w").write(base); time.sleep(300)' "$src/tests/remote" "$scratch/hub-root" &
  server_pid=$!
  trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null' EXIT
  for _ in $(seq 50); do [ -s endpoint ] && break; sleep 0.1; done
fi

while IFS= read -r line; do
  line=${line%%   #*}
  line=$(echo "$line" | sed -E 's/ +# .*$//')
  args=${line#build/bin/headroom-cli }
  args=${args#headroom-cli }
  env=()
  case "$line" in
  "headroom-cli "*)
    if [ -z "$server_pid" ]; then echo "skip (no fixtures): $args"; continue; fi
    # env -i: nothing of this machine's own stores, caches or tokens leaks in.
    env=(env -i PATH="$PATH" HOME="$home" HEADROOM_REMOTE_CACHE="$scratch/remote-cache" HF_ENDPOINT="$(cat endpoint)"
         HEADROOM_HTTP_TIMEOUT_S=5)
    args=${args//hf:\/\/ORG\/NAME/hf://ggml-org/stories260K-GGUF}
    args=${args//ORG\/NAME/meta-llama/Llama-2-7b-hf} ;;
  esac
  case "$args" in
  *" | "*) variants=$(echo "$args" | tr '|' '\n') ;;
  *) variants=$args ;;
  esac
  while IFS= read -r a; do
    a=$(echo "$a" | sed -E 's/^ +| +$//g')
    case "$a" in
    *path/to/*)
      a=${a//path\/to\/Mistral-7B-v0.1/$fixtures/hf/Mistral-7B-v0.1}
      a=${a//path\/to\/model.gguf/$fixtures/gguf/stories260K.gguf}
      if [ ! -e "$fixtures" ]; then echo "skip (no fixtures): $a"; continue; fi ;;
    esac
    case "$a" in report*) [ -x "$bin/headroom-render" ] || a="$a --format md" ;; esac
    # shellcheck disable=SC2086
    out=$("${env[@]}" "$bin/headroom-cli" $a 2>&1)
    rc=$?
    ran=$((ran + 1))
    echo "ran: headroom-cli $a (exit $rc)"
    if [ $rc -ne 0 ]; then fail "headroom-cli $a: exit code $rc" "$out"; continue; fi
    check " $a" "$out"
  done <<< "$variants"
done <<< "$examples
$local_examples"
echo "$ran example commands, $failures failed"
[ "$failures" -eq 0 ] && [ "$ran" -ge 10 ]
