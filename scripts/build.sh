#!/usr/bin/env bash
# build.sh - Configures and builds ptojit into build/ (Release). Extra arguments go to CMake's
# configure step, e.g. scripts/build.sh -DPTO_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) keys objects by paths relative to the checkout, so clones share them.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
