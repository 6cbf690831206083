#!/usr/bin/env bash
# No internal notes in user output (issue 10): every face of the CLI, in every output format, for
# every built-in model profile, prints no fixture provenance, no path into the project's shared
# folder, no BRIEF section and no environment variable of the test set-up. The model profiles
# name their public source (the Hugging Face config.json) instead.
#   nointernalnotes.sh BIN_DIR SCRATCH_DIR [FIXTURES_DIR]
set -uo pipefail
bin=$1 scratch=$2 fixtures=${3:-}
cli=$bin/headroom-cli
mkdir -p "$scratch" && cd "$scratch" || exit 1
forbidden='fixture|shared/|BRIEF|HEADROOM_FIXTURES'
failures=0 ran=0
run() { # NAME COMMAND...: the output (stdout and stderr) must exist and hold no forbidden word
  local name=$1; shift
  local out
  out=$("$@" 2>&1)
  ran=$((ran + 1))
  if [ -z "$out" ]; then echo "FAIL: $name: no output"; failures=$((failures + 1)); return; fi
  local hits
  hits=$(grep -Eion "$forbidden" <<<"$out" | head -5)
  if [ -n "$hits" ]; then echo "FAIL: $name: $hits"; grep -Ei "$forbidden" <<<"$out" | head -3 | cut -c1-300; failures=$((failures + 1)); fi
}
file() { # NAME FILE: as run, on a written file
  ran=$((ran + 1))
  if [ ! -s "$2" ]; then echo "FAIL: $1: $2 not written"; failures=$((failures + 1)); return; fi
  local hits
  hits=$(grep -Eaion "$forbidden" "$2" | head -5)
  if [ -n "$hits" ]; then echo "FAIL: $1: $hits"; failures=$((failures + 1)); fi
}

mapfile -t models < <("$cli" models --json 2>/dev/null | python3 -c 'import json,sys; [print(m["id"]) for m in json.load(sys.stdin)]' 2>/dev/null)
if [ "${#models[@]}" -lt 10 ]; then
  mapfile -t models < <("$cli" models | awk 'NR > 2 && NF && $1 !~ /^[-(]/ {print $1}')
fi
echo "${#models[@]} model profiles"
[ "${#models[@]}" -ge 10 ] || { echo "FAIL: cannot list the model profiles"; exit 1; }

for list in models cards formats engines; do
  run "$list" "$cli" "$list"
  "$cli" "$list" --json >/dev/null 2>&1 && run "$list --json" "$cli" "$list" --json
done
args=(-w fp16 int4-g128 -c rtx-4060 rtx-4090 h100-sxm)
for m in "${models[@]}"; do
  run "plan $m" "$cli" plan -m "$m" -c rtx-4090
  run "plan $m --json" "$cli" plan -m "$m" -c rtx-4090 --json
done
run "table" "$cli" table -m "${models[@]}" -w fp16 -c rtx-4090
run "table --json" "$cli" table -m "${models[@]}" -w fp16 -c rtx-4090 --json
run "frontier" "$cli" frontier -m llama-3.1-8b -c rtx-4090
run "speed" "$cli" speed -m llama-3.1-8b -c rtx-4090
run "speed --json" "$cli" speed -m llama-3.1-8b -c rtx-4090 --json
for e in vllm llama.cpp sglang ollama tgi tensorrt-llm; do
  run "plan --engine $e" "$cli" plan -m llama-3.1-8b -c rtx-4090 --engine "$e"
  run "flags --engine $e" "$cli" flags -m llama-3.1-8b -c rtx-4090 --engine "$e"
done
for f in json md csv; do
  run "report --format $f" "$cli" report -m "${models[@]}" "${args[@]}" --format "$f"
done
rm -f r.html r.pdf
if "$cli" report -m llama-3.1-8b -c rtx-4090 -o r.html >/dev/null 2>&1; then
  "$cli" report -m "${models[@]}" "${args[@]}" -o r.html >/dev/null 2>&1
  file "report html" r.html
  "$cli" report -m "${models[@]:0:12}" -w fp16 -c rtx-4090 -o r.pdf >/dev/null 2>&1
  if command -v pdftotext >/dev/null; then pdftotext r.pdf r.pdf.txt && file "report pdf" r.pdf.txt; else file "report pdf" r.pdf; fi
else
  echo "(html/pdf skipped: no headroom-render)"
fi
# inspect reads a user's file; its own path is the user's, so the file is copied out of the fixtures.
if [ -n "$fixtures" ] && [ -f "$fixtures/hf/Llama-3.2-3B-Instruct/config.json" ]; then
  mkdir -p user-model && cp "$fixtures/hf/Llama-3.2-3B-Instruct/config.json" user-model/
  run "inspect" "$cli" inspect user-model/config.json
  run "inspect --json" "$cli" inspect user-model/config.json --json
  run "plan of a user's config.json" "$cli" plan -m user-model/config.json -c rtx-4090 --json
else
  echo "(inspect skipped: no fixtures)"
fi
echo "no internal notes: $ran outputs, $failures failed"
[ "$failures" -eq 0 ]
