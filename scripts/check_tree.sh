#!/usr/bin/env bash
# check_tree.sh - Checks the habits the tree keeps that no compiler checks (CI stage "tree"):
#   - no library source (base, dsl, codegen, runtime) over 800 lines: a file that keeps growing
#     gets split by concern (tables such as op_kinds.def are exempt);
#   - the README, CONTRIBUTING.md and docs/ link only to files inside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
bad=0
while read -r n f; do
  [ "$f" = total ] && continue
  if [ "$n" -gt 800 ]; then
    echo "check_tree: $f has $n lines (at most 800; split it by concern)" >&2
    bad=1
  fi
done < <(git ls-files 'base/*.cpp' 'base/*.h' 'dsl/*.cpp' 'dsl/*.h' 'codegen/*.cpp' 'codegen/*.h' \
  'runtime/*.cpp' 'runtime/*.h' | xargs wc -l)
if git grep -n -E '\]\((\.\./)+(shared|\.library)|\.\./shared/' -- README.md CONTRIBUTING.md 'docs/*.md'; then
  echo "check_tree: the lines above link outside the repository" >&2
  bad=1
fi
[ $bad -eq 0 ] && echo "check_tree: ok"
exit $bad
