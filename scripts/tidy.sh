#!/usr/bin/env bash
# tidy.sh - Runs clang-tidy 19 with the repository's .clang-tidy over the sources (base, dsl,
# codegen, runtime, tools, samples, tests, bench). Its compile database is build-tidy/, a CMake
# configure of its own (a few seconds, nothing is compiled) with every target on, bench/ included.
# Prints the warnings and exits 1 if there are any.
#
#   scripts/tidy.sh                  # the whole tree (~12 minutes on 2 cores)
#   scripts/tidy.sh 'tests/'         # only the sources whose path matches this regex
#   scripts/tidy.sh --changed [REV]  # only the .cpp files changed since REV's merge base (default:
#                                    # main) and the ones that include a changed header
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
command -v run-clang-tidy-19 >/dev/null || { echo "tidy.sh: run-clang-tidy-19 not found; run scripts/bootstrap.sh" >&2; exit 2; }
dirs='(base|dsl|codegen|runtime|tools|samples|tests|bench)/'
if [ "${1:-}" = "--changed" ]; then
  rev="${2:-main}"
  mapfile -t changed < <(git diff --name-only --diff-filter=d "$(git merge-base "$rev" HEAD)" -- \
    && git ls-files --others --exclude-standard)
  files=()
  for f in "${changed[@]}"; do
    [[ "$f" =~ ^$dirs ]] || continue
    case "$f" in
    *.cpp) files+=("$f") ;;
    *.h | *.def) # the sources that include it (by file name)
      mapfile -t users < <(grep -rlE "#include \"([A-Za-z0-9_/]*/)?$(basename "$f")\"" \
        base dsl codegen runtime tools samples tests bench --include='*.cpp' || true)
      files+=(${users[@]+"${users[@]}"}) ;;
    esac
  done
  if [ ${#files[@]} -eq 0 ]; then
    echo "tidy.sh: no source changed since $rev"
    exit 0
  fi
  filter="($(printf '%s\n' "${files[@]}" | sort -u | sed 's/[.]/\\./g' | paste -sd'|'))"
  echo "tidy.sh: $(printf '%s\n' "${files[@]}" | sort -u | wc -l) sources changed since $rev or include a changed header"
else
  filter="${1:-$dirs}[^ ]*\\.cpp"
fi
# The build's own flags, without -Werror (PTO_WERROR is off here): compiler warnings are GCC's
# job in the build; clang-tidy reports its checks.
cmake -S . -B build-tidy -DCMAKE_BUILD_TYPE=Release -DPTO_BUILD_BENCH=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
log=$(mktemp)
found=$(mktemp)
trap 'rm -f "$log" "$found"' EXIT
# GCC-only warning flags from the build are unknown to clang: drop them for clang-tidy. GCC's
# own headers (quadmath.h) come after clang's, so only those clang lacks are taken from GCC.
run-clang-tidy-19 -p build-tidy -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option \
  -extra-arg=-idirafter"$(gcc -print-file-name=include)" \
  "$(pwd)/${filter}\$" >"$log" 2>&1 || true
grep -E 'warning:|error:' "$log" | grep -v 'warnings generated' | sort -u >"$found" || true
if [ -s "$found" ]; then
  cat "$found" >&2
  echo "tidy.sh: clang-tidy found $(wc -l <"$found") warnings (above)" >&2
  exit 1
fi
echo "tidy.sh: clean"
