#!/usr/bin/env bash
# test.sh - The README's second command (and CI's): install what is missing, check the format
# (clang-format 19) and the tree's habits (scripts/check_tree.sh), build with warnings as
# errors, run every CTest test (label quick, then slow), the runtime tests under ThreadSanitizer,
# the suites built with ASan + UBSan, the error and bounds tests with guard pages and under
# valgrind memcheck, then every sample's --check. Prints each stage's wall time as it ends and,
# at exit (also when a stage fails), a table of every stage and the total: the whole run must
# stay under 60 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

t_start=$(date +%s)
done_stages=()
current="" t_current=0
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
# stage NAME CMD...: runs CMD as stage NAME and records its wall time.
stage() {
  current=$1
  shift
  echo "==== stage $current"
  t_current=$(date +%s)
  "$@"
  local secs=$(($(date +%s) - t_current))
  done_stages+=("$(printf '%-12s %8s' "$current" "$(fmt_secs $secs)")")
  echo "==== stage $current: $(fmt_secs $secs)"
  current=""
}
summary() {
  echo "==== stage times"
  local s
  for s in ${done_stages[@]+"${done_stages[@]}"}; do echo "  $s"; done
  if [ -n "$current" ]; then
    printf '  %-12s %8s  FAILED\n' "$current" "$(fmt_secs $(($(date +%s) - t_current)))"
  fi
  printf '  %-12s %8s\n' total "$(fmt_secs $(($(date +%s) - t_start)))"
}
trap summary EXIT

samples() {
  for pes in 2 4 8; do
    for dt in fp32 bf16 int32; do
      build/samples/allreduce_add_allreduce --pes "$pes" --dtype "$dt" --check
      build/samples/moe_dispatch_combine --pes "$pes" --dtype "$dt" --check
    done
    for dt in fp32 bf16; do
      build/samples/multi_comm_groups --pes "$pes" --dtype "$dt" --check
      build/samples/allgather_matmul --pes "$pes" --dtype "$dt" --check
      build/samples/matmul_allreduce_rmsnorm --pes "$pes" --dtype "$dt" --check
    done
  done
  for dt in fp32 fp16 bf16; do
    build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check
    build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check --interpret
  done
  build/samples/moe_dispatch_combine --pes 4 --dtype bf16 --check --interpret
  build/samples/moe_dispatch_combine --pes 2 --tokens 64 --hidden 100 --experts 6 --topk 3 --check
}

stage bootstrap scripts/bootstrap.sh
stage format scripts/format.sh --check
stage tree scripts/check_tree.sh
stage build scripts/build.sh -DPTO_WERROR=ON
# The two labels partition the tests (tests/CMakeLists.txt): every case runs exactly once.
stage ctest-quick ctest --test-dir build --output-on-failure -LE slow
stage ctest-slow ctest --test-dir build --output-on-failure -L slow
stage tsan scripts/tsan_runtime.sh
stage asan scripts/asan_tests.sh
stage guard-pages scripts/valgrind_tests.sh --guard-pages
stage valgrind scripts/valgrind_tests.sh
stage collectives scripts/check_collectives.sh
stage samples-pes scripts/check_samples_pes.sh
stage samples samples
