#!/usr/bin/env bash
# check_collectives.sh - Runs the collectives sample with --check for every op x reduction x
# dtype (and every allreduce algorithm) on 8 PEs, plus 2, 4 and 64 PEs for allreduce. Prints one
# line per failure and ends with "N passed, M failed"; exits 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/samples/collectives
pass=0 fail=0
run() {
  if out=$("$bin" "$@" --check 2>&1) && grep -q '^check: PASS' <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: collectives $* -> $(tail -n 1 <<<"$out")"
  fi
}
for dt in int8 int16 int32 int64 fp16 bf16 fp32 fp64; do
  for red in sum max min prod; do
    for algo in one_shot two_shot rs_ag; do
      run --op allreduce --reduction "$red" --algorithm "$algo" --pes 8 --dtype "$dt"
    done
    run --op reduce_scatter --reduction "$red" --pes 8 --dtype "$dt"
  done
  run --op allgather --pes 8 --dtype "$dt"
  run --op broadcast --pes 8 --dtype "$dt" --root 5
  run --op all_to_all --pes 8 --rows 16 --dtype "$dt"
done
for pes in 2 4 64; do
  run --op allreduce --pes "$pes" --dtype fp32
  run --op allreduce --pes "$pes" --dtype bf16 --interpret
done
echo "collectives: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
