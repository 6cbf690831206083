#!/usr/bin/env bash
# The hostile-input checks of issue 13 under AddressSanitizer + UndefinedBehaviorSanitizer:
# tst_core_asan "[hostile]" (the importers, the profile loader, the report checker, the atomic
# writer, on a core compiled with the sanitizers) and every CLI hostile case on headroom-cli-asan
# (ctest -L hostile -L asan: the CLI, probes and transport compiled with them). Any sanitizer
# report fails the run. CI runs the same tests inside the whole suite (scripts/test.sh).
#
#   scripts/sanitize.sh            build folder: $HEADROOM_BUILD_DIR or build (configured if absent)
# Builds only tst_core_asan, headroom-cli-asan and hostile-gen (plus headroom-render when the
# folder was configured with the GUI: the PDF leftovers case needs it, and skips without it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/${HEADROOM_BUILD_DIR:-build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${HEADROOM_CMAKE_ARGS:-} >/dev/null
fi
targets=(tst_core_asan headroom-cli-asan hostile-gen)
grep -q '^build bin/headroom-render:' "$build/build.ninja" && targets+=(headroom-render)
start=$(date +%s)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
echo "sanitize: built ${targets[*]} in $(( $(date +%s) - start )) s"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" UBSAN_OPTIONS="print_stacktrace=1"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/runtime-$(id -u)}"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
start=$(date +%s)
"$build/bin/tst_core_asan" "[hostile]"
QT_QPA_PLATFORM=offscreen ctest --test-dir "$build" -L hostile -L asan --output-on-failure -j"$(nproc)"
echo "sanitize: hostile tests under ASan + UBSan passed in $(( $(date +%s) - start )) s"
