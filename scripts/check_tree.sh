#!/usr/bin/env bash
# check_tree.sh - Checks the habits the tree keeps that no compiler checks (CI stage "tree"):
#   - no library source (base, dsl, codegen, runtime) over 800 lines: a file that keeps growing
#     gets split by concern (tables such as op_kinds.def are exempt);
#   - the README, CONTRIBUTING.md and docs/ link only to files inside the repository, and every
#     relative link resolves: the file exists and a #anchor names one of its headings.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
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
# Relative links: the target exists (from the linking file's folder); an anchor matches a heading
# of the target as GitHub slugs it (lowercase, punctuation dropped, spaces to hyphens).
if ! git ls-files README.md CONTRIBUTING.md 'docs/*.md' | python3 -c '
import os, re, sys
def slugs(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(s)
    return out
bad = 0
for md in sys.stdin.read().split():
    for n, line in enumerate(open(md, encoding="utf-8"), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(full):
                print(f"check_tree: {md}:{n}: link to a missing file: {target}", file=sys.stderr)
                bad = 1
            elif anchor and full.endswith(".md") and anchor not in slugs(full):
                print(f"check_tree: {md}:{n}: link to a missing heading: {target}", file=sys.stderr)
                bad = 1
sys.exit(bad)
'; then
  bad=1
fi
[ $bad -eq 0 ] && echo "check_tree: ok"
exit $bad
