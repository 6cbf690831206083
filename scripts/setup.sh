#!/usr/bin/env bash
# Installs what is missing (Debian packages), then configures and builds Headroom in build/.
# Used by scripts/run.sh and scripts/test.sh; safe to run again (a no-op when up to date).
#   HEADROOM_BUILD_DIR  build folder (default: build)
#   HEADROOM_CMAKE_ARGS extra CMake arguments
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(cmake ninja-build g++ qt6-base-dev qt6-charts-dev libqt6opengl6-dev catch2 nlohmann-json3-dev
          libcli11-dev libexpected-dev libvalijson-dev libbenchmark-dev libcurl4-openssl-dev python3 xvfb xauth clang
          libclang-rt-dev time fonts-dejavu-core poppler-utils)
# libclang-rt-dev: clang's libFuzzer and sanitizer runtimes (only a Recommends of clang, which
# --no-install-recommends leaves out); time: GNU time, the memory figures of the hostile tests;
# poppler-utils: pdftotext, the text of the PDF reports (tests/cli/pdfcomplete.sh).
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build="${HEADROOM_BUILD_DIR:-build}"
cuda_args=()
# GPU code compiles whenever nvcc is present (TOOLCHAIN.md §2, §4).
if [ -x /usr/local/cuda/bin/nvcc ]; then cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc); fi
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" ${HEADROOM_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
