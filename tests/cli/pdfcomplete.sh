#!/usr/bin/env bash
# The PDF report draws every heading and caption the Markdown report has (issue 10: keeping a
# heading with what follows it once left the blocks between two tables laid out but not drawn),
# on the app's own export shape: 1 model x 13 formats x 3 cards, a few pages.
#   pdfcomplete.sh BIN_DIR SCRATCH_DIR
set -uo pipefail
bin=$1 scratch=$2
cli=$bin/headroom-cli
mkdir -p "$scratch" && cd "$scratch" || exit 1
if [ ! -x "$bin/headroom-render" ] || ! command -v pdftotext >/dev/null; then
  echo "pdf complete: skipped (no headroom-render or no pdftotext)"
  exit 0
fi
args=(-m llama-3.1-8b -w fp32 fp16 bf16 fp8 int8-row int4-g128 nf4-b64 awq-g128 gptq-g128 q8_0 q6_k q4_k q2_k
      -c rtx-4060 rtx-4060-ti-16gb rtx-4090)
rm -f r.pdf r.md
"$cli" report "${args[@]}" -o r.pdf >/dev/null || { echo "FAIL: no PDF"; exit 1; }
"$cli" report "${args[@]}" -o r.md >/dev/null || { echo "FAIL: no Markdown"; exit 1; }
pdftotext r.pdf r.raw.txt || { echo "FAIL: pdftotext"; exit 1; }
sed 's/\xef\xac\x81/fi/g; s/\xef\xac\x82/fl/g' r.raw.txt > r.txt # the fi and fl ligatures the PDF's font sets
pages=$(grep -c $'\f' r.txt)
failures=0 checked=0
# Each heading (#, ##, ###) and bold caption, as often in the PDF as in the Markdown.
while IFS= read -r line; do
  checked=$((checked + 1))
  want=$(grep -cxF -- "$line" <(sed -E 's/^#+ //; s/^\*\*(.*)\*\*$/\1/' r.md))
  got=$(tr '\f' '\n' < r.txt | grep -cxF -- "$line")
  if [ "$got" -lt "$want" ]; then echo "FAIL: '$line' $want times in the Markdown, $got in the PDF"; failures=$((failures + 1)); fi
done < <(grep -E '^#+ |^\*\*[^*]+\*\*$' r.md | sed -E 's/^#+ //; s/^\*\*(.*)\*\*$/\1/' | awk 'length <= 80' | sort -u) # a longer line wraps in the PDF
if [ "$pages" -gt 10 ]; then echo "FAIL: $pages pages for 1 model x 13 formats x 3 cards"; failures=$((failures + 1)); fi
echo "pdf complete: $pages pages, $checked headings and captions, $failures failed"
[ "$failures" -eq 0 ]
