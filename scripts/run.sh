#!/usr/bin/env bash
# The main job: set up, build, then open the desktop app on the default model (Llama-3.1-8B at
# int4-g128, fp16 KV) and the 8/16/24 GB cards; with no display, print the same plan with the CLI.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
build="$root/${HEADROOM_BUILD_DIR:-build}"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build/bin/headroom" ]; then
  exec "$build/bin/headroom" "$@"
fi
# The window's first view: the default model in the Formats matrix (app/catalog.cpp
# matrixFormatIds) on the 8/16/24 GB cards at 4 users x 8,192 tokens, and its detail cell
# (int4-g128 on the RTX 4090). tests/app checks that this list is the app's.
formats="fp16 fp8 int8-row int4-g128 nf4-b64 awq-g128 q8_0 q6_k q5_k q4_k q3_k q2_k"
cards="rtx-4060 rtx-4060-ti-16gb rtx-4090"
echo "No display: the plan the app opens on, from headroom-cli."
echo
# shellcheck disable=SC2086
"$build/bin/headroom-cli" table -m llama-3.1-8b -w $formats -c $cards --users 4 --context 8192 "$@"
echo
exec "$build/bin/headroom-cli" plan -m llama-3.1-8b -w int4-g128 -c rtx-4090 --users 4 --context 8192 "$@"
