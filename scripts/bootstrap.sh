#!/usr/bin/env bash
# bootstrap.sh - Installs the Debian packages ptojit builds with, if any is missing (idempotent;
# needs root or sudo). LLVM 19, SLEEF, fmt, doctest, CLI11, nlohmann_json,
# Google Benchmark (bench/), CMake, g++, ccache (rebuilds reuse objects), valgrind
# (scripts/valgrind_tests.sh), clang-format and clang-tidy 19 (scripts/format.sh, scripts/tidy.sh),
# FileCheck (llvm-19-tools: tests/codegen/llvm_ir_test.cpp),
# Open MPI (openmpi-bin, libopenmpi-dev: the MPI backend, its CI stage and the bench peers).
# With --bench also the benchmark peers (scripts/bench.sh).
set -euo pipefail
pkgs=(g++ cmake make ccache valgrind clang-format-19 clang-tidy-19 llvm-19-dev libsleef-dev libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev libbenchmark-dev llvm-19-tools openmpi-bin libopenmpi-dev)
# Peers measured by bench/ only: OpenBLAS (matmul_bench, compare), oneDNN (compare).
bench_pkgs=(libopenblas-dev libdnnl-dev)
[ "${1:-}" = "--bench" ] && pkgs+=("${bench_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
