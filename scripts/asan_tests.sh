#!/usr/bin/env bash
# asan_tests.sh - Builds our code (the DSL, the runtime, codegen with the reference interpreter,
# the tests) with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ (CMake option
# PTO_SANITIZE; LLVM, SLEEF and the JIT-compiled code are not instrumented) and runs:
#   test_dsl, test_runtime   every case, both executors (the error tests included)
#   test_codegen, test_e2e   every case (slow ones too) in the interpreter only
#                            (PTO_TEST_INTERPRET_ONLY=1, tests/support/support.h), except the
#                            hostile-input tests (hardening_*_test.cpp, fuzz_*test.cpp), which
#                            run in both executors (the host side of JIT calls too)
# Any finding (a memory error, undefined behaviour, a leak) fails the run at once. Extra
# arguments go to every test executable (doctest flags, e.g. -tc='*valid*').
#
# Why not PTO_RUN_MODE=interpret: kernels that leave run_mode at its default would then run in
# the interpreter too, and some tests assert what generated code does (pipelining_test.cpp:
# per-tile put/signal interleaving); they JIT here, which is fine under ASan.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-asan
# float-cast-overflow is not part of GCC's "undefined": the interpreter and the host code
# convert doubles to ints, where an out-of-range value is UB.
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Release -DPTO_SANITIZE=address,undefined,float-cast-overflow \
  -DPTO_BUILD_SAMPLES=OFF >/dev/null
cmake --build "$out" -j "$(nproc)" --target test_dsl test_runtime test_codegen test_e2e

# halt_on_error: stop at the first report (UBSan also aborts: -fno-sanitize-recover=all).
# Leaks are findings too (detect_leaks=1); LLVM's process-lifetime objects stay reachable from
# its globals, which LeakSanitizer does not report. scripts/lsan.supp holds the policy and any
# suppression, each with its reason.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:strict_init_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# Cases that provoke an allocation failure skip themselves here (support::alloc_failure_aborts):
# ASan's allocator reports and aborts on a request it cannot serve instead of throwing
# std::bad_alloc (allocator_may_return_null covers only malloc and nothrow new).
t="$out/tests"
run() {
  echo "== asan: ${*#"$t/"}"
  "$@"
}
run "$t/test_dsl" "$@"
run "$t/test_runtime" "$@"
hostile='*/hardening_*_test.cpp,*/fuzz_*test.cpp'
for s in codegen e2e; do
  PTO_TEST_INTERPRET_ONLY=1 run "$t/test_$s" --source-file-exclude="$hostile" "$@"
  run "$t/test_$s" --source-file="$hostile" "$@"
done
echo "asan: clean"
