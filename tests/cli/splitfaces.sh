#!/usr/bin/env bash
# A layer split reads the same in every face (issue 11, review of the faces): `plan` prints the
# split's two sides and its max resident tokens as core's split bill gives them (plan --json
# split_bill), not the whole model's weights and the card's empty KV budget; `flags` and the
# report (Markdown, and HTML/PDF where headroom-render is built) launch it with the same command;
# the report's max-context table gives the split's figure as `table` words it; `flags --draft`
# leaves $DRAFT_MODEL to the shell inside vLLM's --speculative-config.
#   splitfaces.sh BIN_DIR SCRATCH_DIR
set -uo pipefail
bin=$1 scratch=$2
cli=$bin/headroom-cli
mkdir -p "$scratch" && cd "$scratch" || exit 1
failures=0 checked=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { checked=$((checked + 1)); }
thousands() { python3 -c "import sys; print(f'{int(sys.argv[1]):,}')" "$1"; }
field() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {'d': d}))" "$1" "$2"; }

base=(-m llama-2-13b -w q4_k -c rtx-4060 --engine llama.cpp)
for offload in auto 12; do
  args=("${base[@]}" --offload "$offload")
  tag="--offload $offload"
  "$cli" plan "${args[@]}" --json > plan.json || { fail "$tag: plan --json"; continue; }
  if [ "$(field plan.json "'split_bill' in d")" != True ]; then fail "$tag: no split_bill in plan --json"; continue; fi
  gpu_layers=$(field plan.json "d['split_bill']['gpu_layers']")
  gpu_bytes=$(field plan.json "d['split_bill']['gpu_bytes']")
  host_bytes=$(field plan.json "d['split_bill']['host_bytes']")
  resident=$(field plan.json "d['split_bill']['resident_tokens']")
  per_seq=$(field plan.json "d['split_bill']['context_tokens_per_sequence']")
  echo "$tag: $gpu_layers layers on the GPU, GPU $gpu_bytes B, host $host_bytes B, $resident resident tokens ($per_seq a sequence)"
  [ "$offload" = auto ] || [ "$gpu_layers" = "$offload" ] || fail "$tag: $gpu_layers layers on the GPU"
  check; [ "$gpu_bytes" -gt 0 ] && [ "$host_bytes" -gt 0 ] && [ "$resident" -gt 0 ] || fail "$tag: a side or the resident tokens is 0"
  check; [ "$(field plan.json "d['max_resident_tokens']")" = "$resident" ] || fail "$tag: max_resident_tokens is not the split's"

  # 1. The bill of `plan`: both sides with core's totals, the split's resident tokens, no card KV budget.
  "$cli" plan "${args[@]}" > plan.txt || fail "$tag: plan"
  check; grep -q '^  GPU side .*'"$gpu_layers"' of 41 layers on the GPU' plan.txt || fail "$tag: no GPU side row"
  check; grep -qE "^  = on the GPU +$(thousands "$gpu_bytes") " plan.txt || fail "$tag: '= on the GPU' is not $(thousands "$gpu_bytes")"
  check; grep -qE "^  = in host memory +$(thousands "$host_bytes") " plan.txt || fail "$tag: '= in host memory' is not $(thousands "$host_bytes")"
  check; grep -qE "^  max resident tokens +$(thousands "$resident")$" plan.txt || fail "$tag: max resident tokens is not $(thousands "$resident")"
  check; ! grep -q 'KV cache budget' plan.txt || fail "$tag: the card's KV budget row is printed for a split"
  check; grep -q 'weights (GPU layers)' plan.txt && grep -q 'KV cache (GPU layers)' plan.txt && grep -q 'KV cache (host layers)' plan.txt \
    && grep -q 'compute buffer (host)' plan.txt && grep -q 'mapped with mmap, not a copy' plan.txt || fail "$tag: a term of a side is missing"

  # 2. `flags` and the report launch it with one command.
  "$cli" flags "${args[@]}" > flags.txt || { fail "$tag: flags failed: $(cat flags.txt)"; continue; }
  command=$(sed -n 2p flags.txt)
  check; [[ "$command" == *" -ngl $gpu_layers "* ]] || fail "$tag: flags command has no -ngl $gpu_layers: $command"
  "$cli" report "${args[@]}" -o r.md > /dev/null 2>&1 || fail "$tag: report -o r.md"
  check; grep -qxF -- "$command" r.md || fail "$tag: the report's command differs from flags'"
  check; ! grep -q 'No launch flags' r.md || fail "$tag: the report says $(grep 'No launch flags' r.md)"
  check; grep -q '^\*\*GPU side: ' r.md && grep -q '^\*\*Host side' r.md || fail "$tag: the report has no split bill"

  # 3. The max-context table gives the split's figure as `table` words it.
  cell=$("$cli" table "${args[@]}" | grep -oE '[0-9][0-9,]* \(partial: [0-9]+/[0-9]+ layers, [^)]*\)')
  check; [ -n "$cell" ] || fail "$tag: table has no partial cell"
  check; grep -A20 'max context per user (tokens)' r.md | grep -qF "| $cell |" || fail "$tag: the max-context table has not '$cell'"
  echo "$tag: flags and report: $command; max-context cell: $cell"

  if [ -x "$bin/headroom-render" ]; then
    rm -f r.pdf r.html
    env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$cli" report "${args[@]}" -o r.pdf > /dev/null || fail "$tag: report -o r.pdf"
    env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$cli" report "${args[@]}" -o r.html > /dev/null || fail "$tag: report -o r.html"
    pdftotext -layout r.pdf r.txt 2>/dev/null || fail "$tag: pdftotext"
    check; grep -q -- "-ngl $gpu_layers" r.txt || fail "$tag: the PDF has no -ngl $gpu_layers"
    check; ! grep -q 'No launch flags' r.txt r.html || fail "$tag: the PDF or HTML says No launch flags"
    check; grep -q 'GPU side' r.txt && grep -qF "$(thousands "$host_bytes")" r.txt || fail "$tag: the PDF has no split bill"
    check; grep -qF "${cell%% (*}" r.txt && grep -q 'partial: ' r.txt || fail "$tag: the PDF's max-context table has not '$cell'"
    check; grep -qF -- "-ngl $gpu_layers" r.html || fail "$tag: the HTML has no -ngl $gpu_layers"
  fi
done

# 4. flags --draft: vLLM's --speculative-config names $DRAFT_MODEL where the shell expands it.
"$cli" flags -m llama-3.1-8b -w bf16 -c h100-sxm --engine vllm --draft llama-3.2-1b > draft.txt || fail "flags --draft"
command=$(sed -n 2p draft.txt)
spec=$(MODEL=/models/target DRAFT_MODEL=/models/draft bash -c 'eval "set -- ${1#vllm serve }"; while [ $# -gt 0 ]; do [ "$1" = --speculative-config ] && { echo "$2"; break; }; shift; done' _ "$command")
echo "flags --draft: $command -> $spec"
check; [ "$spec" = '{"model": "/models/draft", "num_speculative_tokens": 4}' ] || fail "--speculative-config reaches vLLM as '$spec'"

echo "split faces: $checked checks, $failures failed"
[ "$failures" -eq 0 ]
