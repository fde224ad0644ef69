#!/usr/bin/env bash
# check_samples_pes.sh - Every sample's defaults work for every PE count its --help allows: runs
# each sample (collectives: each op) with --check at its default sizes for every allowed PE
# count up to 8, plus 16 and 64 (where allowed), reading the allowed range from `--help`; checks
# that PE counts --help rejects exit 2 without running, that a bad --seed (negative, past 2^64,
# not decimal) and an empty or unwritable --trace are flag errors (exit 2) before the run, and
# that PTO_RUN_MODE=interpret reaches the kernels. Prints one line per failure and ends with
# "N passed, M failed"; exits 1 on any failure. Usage: scripts/check_samples_pes.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/samples
samples=(allreduce_softmax allreduce_add_allreduce multi_comm_groups allgather_matmul
         matmul_allreduce_rmsnorm moe_dispatch_combine collectives sharded_mlp sharded_attention)
pass=0 fail=0
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
ok() { pass=$((pass + 1)); }
bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
}
# Runs a sample with --check; passes when it prints `check: PASS`.
run() {
  local out
  if out=$("$bin/$1" "${@:2}" --check 2>&1) && grep -q '^check: PASS' <<<"$out"; then
    ok
  else
    bad "$* -> $(tail -n 1 <<<"$out")"
  fi
}
# Expects exit code $1 from the rest of the command line.
expect_exit() {
  local want=$1 got
  shift
  "$bin/$1" "${@:2}" >/dev/null 2>&1
  got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, want $want"; fi
}
for s in "${samples[@]}"; do
  # "--pes INT:INT in [2 - 4096]:EVEN=4": the range, and whether only even counts are allowed.
  line=$("$bin/$s" --help | grep -E -- '^ +--pes ')
  lo=$(sed -E 's/.*\[([0-9]+) - ([0-9]+)\].*/\1/' <<<"$line")
  hi=$(sed -E 's/.*\[([0-9]+) - ([0-9]+)\].*/\2/' <<<"$line")
  even=0
  grep -q 'EVEN' <<<"$line" && even=1
  allowed() { [ "$1" -ge "$lo" ] && [ "$1" -le "$hi" ] && { [ "$even" -eq 0 ] || [ $(($1 % 2)) -eq 0 ]; }; }
  ops=(default)
  [ "$s" = collectives ] && ops=(allreduce allgather reduce_scatter broadcast all_to_all)
  for pes in 1 2 3 4 5 6 7 8 16 64; do
    allowed "$pes" || continue
    for op in "${ops[@]}"; do
      if [ "$op" = default ]; then run "$s" --pes "$pes"; else run "$s" --op "$op" --pes "$pes"; fi
    done
  done
  # --help tells the truth: what it rejects is a flag error (exit 2), before any work.
  expect_exit 2 "$s" --pes $((hi + 1))
  expect_exit 2 "$s" --pes $((lo - 1))
  [ "$even" -eq 1 ] && expect_exit 2 "$s" --pes $((lo + 1))
  expect_exit 2 "$s" --trace ''
  # --seed is a decimal integer in [0, 2^64) (--help): anything else is a flag error, never a
  # silently wrapped or saturated seed; the largest one runs.
  for seed in -1 18446744073709551616 abc 0x10 1e3; do expect_exit 2 "$s" --seed "$seed"; done
  run "$s" --pes "$lo" --seed 18446744073709551615
  # A trace file that cannot be written is a flag error before the run (not a failure after
  # it); one that can is written.
  expect_exit 2 "$s" --trace "$dump/no/such/dir/t.json"
  expect_exit 2 "$s" --trace "$dump"
  run "$s" --pes "$lo" --trace "$dump/t.json"
  [ -s "$dump/t.json" ] && ok || bad "$s --trace $dump/t.json wrote no trace"
  # PTO_RUN_MODE=interpret reaches the kernels: they pass and no LLVM module is dumped.
  rm -rf "$dump"/*
  if out=$(PTO_RUN_MODE=interpret PTO_DUMP=llvm PTO_DUMP_DIR="$dump" "$bin/$s" --pes "$lo" \
             --check 2>&1) && grep -q 'mode=interpret' <<<"$out" &&
     grep -q '^check: PASS' <<<"$out" && [ -z "$(ls -A "$dump")" ]; then
    ok
  else
    bad "PTO_RUN_MODE=interpret $s --pes $lo -> $(tail -n 1 <<<"$out"); dumped: $(ls "$dump")"
  fi
done
# The control: without PTO_RUN_MODE the same dump setting does write LLVM modules.
rm -rf "$dump"/*
PTO_DUMP=llvm PTO_DUMP_DIR="$dump" "$bin/collectives" --pes 2 >/dev/null 2>&1
if [ -n "$(ls -A "$dump")" ]; then ok; else bad "PTO_DUMP=llvm collectives wrote no dump"; fi
# A run too large for this machine is refused before it allocates (exit 2).
expect_exit 2 collectives --rows 65536 --cols 65536 --pes 2
echo "samples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
