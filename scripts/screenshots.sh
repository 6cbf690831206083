#!/usr/bin/env bash
# Regenerates docs/screenshots/*.png with `headroom --screenshot`: the main window at 1280x800
# and 1920x1080 in the light and dark palettes (plots tab), and each other detail tab at
# 1280x800 light. Look at them after running it.
#
#   scripts/screenshots.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
app=$build/bin/headroom
out=$root/docs/screenshots
if [ ! -x "$app" ]; then
  echo "screenshots.sh: $app not found; build the 'headroom' target first" >&2
  exit 1
fi
mkdir -p "$out"
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/runtime-$(id -u)}
mkdir -p -m 700 "$XDG_RUNTIME_DIR"

shot() { # FILE ARGS...
  local file=$1
  shift
  "$app" --screenshot "$out/$file" "$@" 2> >(grep -v -e propagateSizeHints >&2)
  echo "$out/$file"
}
for size in 1280x800 1920x1080; do
  shot "main-$size-light.png" --size "$size" --light
  shot "main-$size-dark.png" --size "$size" --dark
done
for tab in bill engines probes; do
  shot "$tab-1280x800-light.png" --size 1280x800 --light --tab "$tab"
done
shot "engines-1280x800-dark.png" --size 1280x800 --dark --tab engines
# The Log panel on a corpus log (vLLM 0.19, Llama-3.1-8B on an H100): predicted vs measured and
# the calibrated what-fits; HOME elsewhere so no local store or saved calibration leaks in.
logdir=$(mktemp -d)
log=$logdir/vllm-0.19-llama-3.1-8b-h100-ctx8192.log
python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["log"]))' \
  "$root/tests/data/engine-logs/vllm-0.19-llama-3.1-8b-h100-ctx8192.json" > "$log"
HOME=$logdir shot "log-1280x800-light.png" --size 1280x800 --light --log "$log"
rm -rf "$logdir"
