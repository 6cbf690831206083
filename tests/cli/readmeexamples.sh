#!/usr/bin/env bash
# Runs every example command of README.md ("What it answers") and checks that its output answers
# the question: exit code 0, a table with at least one cell that fits, a verdict for a plan, speed
# only for a plan that loads, a written report, launch flags.
#   readmeexamples.sh README BIN_DIR FIXTURES_DIR SCRATCH_DIR
set -uo pipefail
readme=$1 bin=$2 fixtures=$3 scratch=$4
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
  *" plan "*) echo "$out" | grep -Eq '^  verdict +(fits|fits with less|does not fit)$' || fail "$cmd: no verdict" "$out" ;;
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
[ -n "$examples" ] || { echo "FAIL: no examples found in $readme"; exit 1; }
while IFS= read -r line; do
  line=${line%%   #*}
  line=$(echo "$line" | sed -E 's/ +# .*$//')
  args=${line#build/bin/headroom-cli }
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
    out=$("$bin/headroom-cli" $a 2>&1)
    rc=$?
    ran=$((ran + 1))
    echo "ran: headroom-cli $a (exit $rc)"
    if [ $rc -ne 0 ]; then fail "headroom-cli $a: exit code $rc" "$out"; continue; fi
    check " $a" "$out"
  done <<< "$variants"
done <<< "$examples"
echo "$ran example commands, $failures failed"
[ "$failures" -eq 0 ] && [ "$ran" -ge 10 ]
