#!/usr/bin/env bash
# build.sh - Configures and builds ptojit into build/ (Release). Extra arguments go to CMake's
# configure step, e.g. scripts/build.sh -DPTO_WERROR=ON. ccache and its settings: CMakeLists.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
