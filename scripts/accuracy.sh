#!/usr/bin/env bash
# Regenerates docs/accuracy.md from the engine-log corpus (tests/data/engine-logs): builds
# tst_core if needed and runs its [engine-logs] test with HEADROOM_ACCURACY_MD set, which plans
# every case from the card total and the settings and writes the table. Never edit the file by hand.
#   scripts/accuracy.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHEADROOM_WITH_CUDA=OFF -DHEADROOM_BUILD_GUI=OFF >/dev/null
fi
cmake --build "$build" --target tst_core -j "$(nproc)" >/dev/null
tmp="$(mktemp "$root/docs/.accuracy.md.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
HEADROOM_ACCURACY_MD="$tmp" "$build/bin/tst_core" "[engine-logs]" >/dev/null || {
  echo "accuracy.sh: the [engine-logs] test failed; run $build/bin/tst_core \"[engine-logs]\" to see why" >&2
  exit 1
}
mv "$tmp" "$root/docs/accuracy.md"
trap - EXIT
echo "wrote docs/accuracy.md"
