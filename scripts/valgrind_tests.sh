#!/usr/bin/env bash
# valgrind_tests.sh - Runs the error and bounds tests (tests/dsl/errors_test.cpp, every
# tests/*/hardening_*_test.cpp, and the fuzz test with a bounded number of cases) of the plain
# build (build/, built if missing) in both executors under valgrind memcheck: unlike ASan,
# memcheck also sees the JIT-compiled code, so a kernel that reads or writes past a HostTensor
# (or reads uninitialised memory) is a finding. Any memcheck error fails the run at once.
# Cases that cannot run under valgrind skip themselves (tests/support/support.h:
# alloc_failure_aborts, long_double_is_double).
#
#   scripts/valgrind_tests.sh                 # under valgrind memcheck (minutes)
#   scripts/valgrind_tests.sh --guard-pages   # natively, with a PROT_NONE page after every
#                                             # HostTensor (PTO_HOST_TENSOR_GUARD=pages): an
#                                             # overrun faults at once (seconds)
# Other arguments go to every test executable (doctest flags, e.g. -tc='*valid*').
set -euo pipefail
cd "$(dirname "$0")/.."
mode=valgrind
if [ "${1:-}" = "--guard-pages" ]; then
  mode=guard-pages
  shift
fi
[ -d build ] || scripts/build.sh
cmake --build build -j "$(nproc)" --target test_dsl test_runtime test_codegen test_e2e

tests=(--source-file='*/errors_test.cpp,*/hardening_*_test.cpp,*/fuzz_*test.cpp'
  --test-suite-exclude=slow)
if [ "$mode" = valgrind ]; then
  # Under memcheck, HostTensors come from the heap (no guard): its redzones catch overruns on
  # both sides; 128 bytes covers a whole 16-lane fp64 vector. No leak check: ASan's job
  # (scripts/asan_tests.sh), and LLVM keeps reachable memory until exit. --fair-sched: PEs spin
  # at barriers. Waits use a long deadlock timeout: everything runs ~50x slower here, and the
  # fuzz test runs 40 cases (~1 s each; scripts/asan_tests.sh and CTest run its default count).
  # No mismatched-free reports: the fuzz test replaces the global operator new/delete of
  # test_e2e (malloc/free underneath), which memcheck only partly redirects, so every delete
  # in test_e2e would be reported as a mismatched free.
  export PTO_HOST_TENSOR_GUARD=none
  export PTO_DEADLOCK_TIMEOUT_MS="${PTO_DEADLOCK_TIMEOUT_MS:-600000}"
  export PTO_FUZZ_CASES="${PTO_FUZZ_CASES:-40}"
  # --vex-guest-max-insns=20 (default 50): VEX, valgrind's translator, has 5 MB of temporary
  # storage per translation, and memcheck's instrumentation of some 50-instruction superblocks
  # of JIT-compiled AVX2 code overflows it ("VEX temporary storage exhausted", which aborts
  # valgrind itself, not our code: test_e2e's fuzz case 21 of seed 1, an 8-PE shmem
  # view/put/get kernel, does). Smaller superblocks keep every translation within it.
  runner=(valgrind -q --tool=memcheck --error-exitcode=1 --exit-on-first-error=yes
    --leak-check=no --redzone-size=128 --fair-sched=yes --smc-check=all-non-file
    --show-mismatched-frees=no --vex-guest-max-insns=20)
  # Left out under memcheck, for time only: LLVM compiles this case's 30000-term expression
  # for ~90 s natively, hours at memcheck's ~50x; its kernel runs natively, with guard pages
  # and under ASan.
  tests+=(--test-case-exclude='a loop bound that is a 30000-term sum*')
else
  export PTO_HOST_TENSOR_GUARD=pages
  runner=()
fi
for s in dsl runtime codegen e2e; do
  echo "== $mode: test_$s"
  ${runner[@]+"${runner[@]}"} "build/tests/test_$s" "${tests[@]}" "$@"
done
echo "$mode: clean"
