#!/usr/bin/env bash
# tidy.sh - Runs clang-tidy 19 with the repository's .clang-tidy over the library sources
# (base, dsl, codegen, runtime, tools) using build/compile_commands.json (run scripts/build.sh
# first). Prints the warnings and exits 1 if there are any.
#
#   scripts/tidy.sh                 # every library source (several minutes on 2 cores)
#   scripts/tidy.sh 'codegen/llvm'  # only files whose path matches this regex
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
command -v run-clang-tidy-19 >/dev/null || { echo "tidy.sh: run-clang-tidy-19 not found; run scripts/bootstrap.sh" >&2; exit 2; }
[ -f build/compile_commands.json ] || { echo "tidy.sh: build/compile_commands.json missing; run scripts/build.sh" >&2; exit 2; }
filter="${1:-(base|dsl|codegen|runtime|tools)/}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# GCC-only warning flags from the build are unknown to clang: drop them for clang-tidy.
run-clang-tidy-19 -p build -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option \
  "$(pwd)/${filter}[^ ]*\\.cpp\$" >"$log" 2>&1 || true
grep -E 'warning:|error:' "$log" | grep -v 'warnings generated' | sort -u | tee /dev/stderr | grep -q . && {
  echo "tidy.sh: clang-tidy found the warnings above" >&2
  exit 1
}
echo "tidy.sh: clean"
