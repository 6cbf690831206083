#!/usr/bin/env bash
# The main job: set up, build, then open the desktop app on the default model (Llama-3.1-8B at
# int4-g128, fp16 KV, vLLM) and the 8/16/24 GB cards; with no display, print the same plan with the CLI.
#   scripts/run.sh [--print-command] [ARGS...]   ARGS go to the app, or to each CLI command
# --print-command prints the commands it would run (one a line) instead of running them, and
# skips setup: tests/app checks the display decision and that the CLI prints the app's plan.
# HEADROOM_BUILD_DIR: the build folder (relative to the repository, or absolute; default build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry=0
if [ "${1:-}" = "--print-command" ]; then dry=1; shift; fi
build=${HEADROOM_BUILD_DIR:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
run() { # COMMAND...: run it, or print it with --print-command
  if [ "$dry" = 1 ]; then printf '%q ' "$@" | sed 's/ $//'; echo; else "$@"; fi
}
[ "$dry" = 1 ] || "$root/scripts/setup.sh"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build/bin/headroom" ]; then
  [ "$dry" = 1 ] && { run "$build/bin/headroom" "$@"; exit 0; }
  exec "$build/bin/headroom" "$@"
fi
# The window's first view: the default model in the Formats matrix (app/catalog.cpp
# matrixFormatIds) on the default cards at the default question, and its detail cell (the
# default format on the RTX 4090). Model, cards, users and context are the CLI's defaults, the
# same core/defaults.h the app opens on; tests/app runs these commands and compares them with it.
formats="fp16 fp8 int8-row int4-g128 nf4-b64 awq-g128 q8_0 q6_k q5_k q4_k q3_k q2_k"
[ "$dry" = 1 ] || { echo "No display: the plan the app opens on, from headroom-cli."; echo; }
# shellcheck disable=SC2086
run "$build/bin/headroom-cli" table -w $formats "$@"
[ "$dry" = 1 ] || echo
run "$build/bin/headroom-cli" plan -c rtx-4090 "$@"
