#!/usr/bin/env bash
# Copies the header-only dependencies (Catch2 v2, nlohmann/json, CLI11, tl::expected, valijson)
# from this Debian machine's /usr/include into .deps/include (git-ignored), for machines that
# have no Debian packages: configure there with -DHEADROOM_DEPS_INCLUDE=.deps/include
# (TOOLCHAIN.md §11).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$root/.deps/include"
mkdir -p "$dest"
for dep in catch2 nlohmann CLI tl valijson; do
  if [ ! -d "/usr/include/$dep" ]; then
    echo "copy-deps: /usr/include/$dep is missing; install the Debian package first (README)" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$dep"
  cp -a "/usr/include/$dep" "$dest/"
done
echo "copy-deps: $(du -sh "$dest" | cut -f1) in $dest"
