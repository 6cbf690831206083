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
echo "No display: the same plan from headroom-cli."
echo
exec "$build/bin/headroom-cli" table "$@"
