#!/usr/bin/env bash
# Regenerates docs/screenshots/*.png with `headroom --screenshot`: every view (the plots tab of
# the main window, the Memory bill, Engines compared, Probes, the speed per split of a partial
# offload (Llama-2-13B q4_k on an RTX 4060 under llama.cpp) and the Log panel) at 1280x800 and
# 1920x1080 in the light and dark palettes. Look at every one after running it.
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
# The Log panel on a corpus log (vLLM 0.19, Llama-3.1-8B on an H100): predicted vs measured and
# the calibrated what-fits; HOME elsewhere so no local store or saved calibration leaks in.
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT
log=$logdir/vllm-0.19-llama-3.1-8b-h100-ctx8192.log
python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["log"]))' \
  "$root/tests/data/engine-logs/vllm-0.19-llama-3.1-8b-h100-ctx8192.json" > "$log"
for size in 1280x800 1920x1080; do
  for palette in light dark; do
    shot "main-$size-$palette.png" --size "$size" --"$palette"
    for tab in bill engines probes; do
      shot "$tab-$size-$palette.png" --size "$size" --"$palette" --tab "$tab"
    done
    # A partial offload: the fit indicator per cell, the GPU and host RAM rows of the memory bar,
    # the GPU-layers slider at --fit's split and the speed per split (the detail shows the last card).
    shot "offload-$size-$palette.png" --size "$size" --"$palette" --model llama-2-13b --format q4_k --engine llama.cpp \
      --cards rtx-4090,rtx-4060-ti-16gb,rtx-4060 --tab split
    HOME=$logdir HF_HUB_OFFLINE=1 HEADROOM_USER_PROFILES=$logdir/profiles shot "log-$size-$palette.png" --size "$size" --"$palette" --log "$log"
  done
done
