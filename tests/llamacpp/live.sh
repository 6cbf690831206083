#!/bin/sh
# CTest llamacpp_oracle_live: re-runs the llama.cpp oracle on a small subset of the grid and checks
# that the recorded data (oracle-grid.json) still holds. Exits 77 (skipped) without node or without
# the npm package (cd tests/llamacpp && npm ci).
# Usage: live.sh WORKDIR
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-${TMPDIR:-/tmp}/headroom-oracle-live}
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed; the llama.cpp oracle needs node and node-llama-cpp (cd tests/llamacpp && npm ci)"
    exit 77
fi
if [ ! -d "$here/node_modules/node-llama-cpp" ]; then
    echo "SKIP: node-llama-cpp is not installed in tests/llamacpp (cd tests/llamacpp && npm ci)"
    exit 77
fi
rm -rf "$work" && mkdir -p "$work" || exit 1
node "$here/oracle.mjs" "$work/live.json" --subset --workdir "$work" || exit 1
node "$here/compare.mjs" "$work/live.json" "$here/oracle-grid.json"
status=$?
rm -rf "$work"
exit $status
