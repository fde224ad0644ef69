#!/usr/bin/env bash
# fuzz_campaign.sh - Runs a large fuzz campaign (tests/e2e/fuzz_test.cpp) in chunks of separate
# processes, so that a case that crashes or hangs ends only its chunk: the next chunk starts
# after it. Prints every distinct failure class with its first repro and a count.
#   scripts/fuzz_campaign.sh [SEED] [CASES] [CHUNK]      (defaults 1 20000 500)
# Environment: PTO_FUZZ_KINDS, PTO_TEST_INTERPRET_ONLY as for the test; OUT=DIR for the logs
# (default build/fuzz_campaign); FIRST=I resumes at case I; BIN=the test executable (default build/tests/test_e2e). Memory is capped (ulimit -v 16 GiB) unless NO_ULIMIT=1.
set -uo pipefail
cd "$(dirname "$0")/.."
seed=${1:-1} cases=${2:-20000} chunk=${3:-500}
out=${OUT:-build/fuzz_campaign}
bin=${BIN:-build/tests/test_e2e}
mkdir -p "$out"
log="$out/seed$seed.log"
first=${FIRST:-0} # resume a campaign at this case (its log is appended to)
timeout=${PTO_FUZZ_CASE_TIMEOUT_MS:-30000}
start_s=$(date +%s)
[ "$first" -gt 0 ] || : >"$log"
[ "${NO_ULIMIT:-0}" = 1 ] || ulimit -v $((16 * 1024 * 1024))
i=$first
while [ "$i" -lt "$cases" ]; do
  n=$((cases - i < chunk ? cases - i : chunk))
  PTO_FUZZ_SEED=$seed PTO_FUZZ_FIRST=$i PTO_FUZZ_CASES=$n PTO_FUZZ_LOG="$log" \
    PTO_FUZZ_CASE_TIMEOUT_MS=$timeout "$bin" -tc='fuzz*' >"$out/chunk_$i.out" 2>&1
  rc=$?
  last=$(grep '^start ' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ -n "$last" ] && [ "$last" -ge "$i" ]; then
    # The process died in case $last (a signal or the watchdog): record it, go on after it.
    cls=$(grep "^start $last " "$log" | tail -1 | cut -d' ' -f3)
    why=$(grep -E '^fuzz: (fatal signal|the running case hangs)|corrupt|double free' \
      "$out/chunk_$i.out" | head -2 | tr '\n' ' ')
    # Alone again: a heap corrupted by an earlier case of the chunk can kill a later one.
    PTO_FUZZ_SEED=$seed PTO_FUZZ_FIRST=$last PTO_FUZZ_CASES=1 PTO_FUZZ_CASE_TIMEOUT_MS=$timeout \
      "$bin" -tc='fuzz*' >"$out/alone_$last.out" 2>&1
    arc=$?
    if [ "$arc" -ne 0 ] && [ "$arc" -ne 1 ]; then
      echo "FAIL $last $cls:fatal process | exit $rc; ${why:-no message}" >>"$log"
    else
      echo "FAIL $last $cls:fatal-after-earlier-case process | exit $rc, passes alone;" \
        "${why:-no message}" >>"$log"
    fi
    i=$((last + 1))
  else
    i=$((i + n))
  fi
done
echo "campaign seed $seed, $cases cases: $(grep -c '^start ' "$log") run in $(($(date +%s) - start_s)) s"
# One line per class: count, key, first case, its repro.
grep '^FAIL ' "$log" | awk '{ key=$3; n[key]++; if (!(key in first)) first[key]=$2 }
  END { for (k in n) printf "%6d  %-60s first case %s\n", n[k], k, first[k] }' | sort -k2
echo "repro: PTO_FUZZ_SEED=$seed PTO_FUZZ_FIRST=<case> PTO_FUZZ_CASES=1 build/tests/test_e2e -tc='fuzz*'"
