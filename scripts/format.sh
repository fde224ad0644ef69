#!/usr/bin/env bash
# format.sh - Formats every tracked C++ file with clang-format 19 and the repository's
# .clang-format.
#
#   scripts/format.sh            # rewrite the files in place
#   scripts/format.sh --check    # change nothing; list the files that differ and exit 1 if any
#   scripts/format.sh FILE...    # only these files
#
# The version is pinned: two clang-format releases format some lines differently, and CI must
# agree with what a developer ran. scripts/bootstrap.sh installs clang-format-19.
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-clang-format-19}
command -v "$CF" >/dev/null || { echo "format.sh: $CF not found; run scripts/bootstrap.sh" >&2; exit 2; }
check=0
files=()
for a in "$@"; do
  case "$a" in
  --check) check=1 ;;
  -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "format.sh: unknown option $a (try --help)" >&2; exit 2 ;;
  *) files+=("$a") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ $check -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" "$CF" -i --style=file
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$CF" --style=file "$f" | cmp -s "$f" - || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format.sh: ${#bad[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
