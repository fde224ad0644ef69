#!/usr/bin/env bash
# test.sh - The README's second command (and CI's): install what is missing, check the format
# (clang-format 19) and the tree's habits (scripts/check_tree.sh), build with warnings as
# errors, build and run a user's project against it both ways (tests/consumer), run every CTest test (label quick, then slow), the codegen tests and a few more with
# the JIT capped at AVX2 (PTO_ISA=avx2), the runtime tests under ThreadSanitizer, the suites
# built with ASan + UBSan, the error and bounds tests with guard pages and under valgrind
# memcheck, then every sample's --check, then the MPI backend under mpirun (2 and 4 ranks), then
# clang-tidy (scripts/tidy.sh) over the whole tree. Prints each stage's wall time as it ends and,
# at exit (also when a stage fails), a table of every stage and the total: the whole run must stay
# under 60 minutes on 2 cores.
#
#   PTO_TIDY=all      # default: clang-tidy over the whole tree (~12 minutes on 2 cores)
#   PTO_TIDY=changed  # only the sources changed since main's merge base (scripts/tidy.sh --changed)
#   PTO_TIDY=off      # no clang-tidy stage
set -euo pipefail
cd "$(dirname "$0")/.."
# The on-disk kernel cache of every stage (tests, samples, MPI): under the build tree, never the
# user's own (~/.cache/ptojit); it goes with build/.
export PTO_CACHE_DIR="$PWD/build/ptojit-cache"

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
    build/samples/sharded_mlp --pes "$pes" --check
    build/samples/sharded_attention --pes "$pes" --check
  done
  build/samples/sharded_mlp --mesh 4x2 --dtype bf16 --check
  build/samples/sharded_attention --mesh 2x4 --dtype bf16 --check --interpret
  for dt in fp32 fp16 bf16; do
    build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check
    build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check --interpret
  done
  build/samples/moe_dispatch_combine --pes 4 --dtype bf16 --check --interpret
  build/samples/moe_dispatch_combine --pes 2 --tokens 64 --hidden 100 --experts 6 --topk 3 --check
}

# The AVX2 code paths (what AVX2-only machines run) on any host with AVX2: the JIT capped by
# PTO_ISA=avx2 (codegen/passes/isa.h). The codegen suites whole (ops, ULP sweep, SLEEF names), a
# few e2e files and a sample; then a dump of that sample's kernels must hold no AVX-512 register
# (zmm), which shows that the cap took effect. A subshell: PTO_ISA stays here.
isa_avx2() (
  if ! grep -qw avx2 /proc/cpuinfo; then
    echo "isa-avx2: skipped, this host has no AVX2"
    exit 0
  fi
  export PTO_ISA=avx2
  build/tests/test_codegen
  build/tests/test_e2e --test-suite-exclude=slow \
    --source-file='*/golden_st_test.cpp,*/regressions_test.cpp,*/control_flow_test.cpp,*/fuzz_test.cpp'
  dumps=$(mktemp -d)
  trap 'rm -rf "$dumps"' EXIT
  PTO_DUMP=asm PTO_DUMP_DIR="$dumps" build/samples/allreduce_softmax --pes 2 --check
  if [ -z "$(ls -A "$dumps")" ]; then
    echo "isa-avx2: the sample wrote no asm dump"
    exit 1
  fi
  if grep -rlq zmm "$dumps"; then
    echo "isa-avx2: code compiled with PTO_ISA=avx2 uses AVX-512 registers"
    exit 1
  fi
)

# The MPI backend (when built: PTO_WITH_MPI): the transport tests and the collectives sample's
# checks under mpirun on 2 and 4 ranks, on shared-memory windows and on the plain RMA path
# (PTO_MPI_SHARED=0), and once with Open MPI's osc/pt2pt forced (no progress thread: it refuses
# MPI_THREAD_MULTIPLE), and every sample. Every rank must print `check: PASS`. A few minutes.
mpi_checks() (
  if [ ! -x build/tests/test_mpi ]; then
    echo "mpi: skipped, built without MPI (PTO_WITH_MPI=OFF)"
    exit 0
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  run() { timeout 300 mpirun --oversubscribe "$@"; }
  for np in 2 4; do
    run -np "$np" build/tests/test_mpi
    PTO_MPI_SHARED=0 run -np "$np" build/tests/test_mpi
    for sh in 1 0; do
      for args in "--op allreduce" "--op allreduce --dtype bf16 --algorithm two_shot" \
        "--op allgather --dtype fp16" "--op reduce_scatter --dtype int32" "--op broadcast --root 1" \
        "--op all_to_all --rows 13"; do
        out=$(PTO_MPI_SHARED=$sh run -np "$np" build/samples/collectives --backend mpi --check $args)
        if [ "$(grep -c 'check: PASS' <<<"$out")" -ne "$np" ]; then
          echo "$out"
          echo "mpi: collectives $args on $np ranks (PTO_MPI_SHARED=$sh): not every rank passed"
          exit 1
        fi
      done
    done
  done
  # Every other sample once per rank count, on the shared and on the RMA path.
  for np in 2 4; do
    for sh in 1 0; do
      for cmd in "allreduce_add_allreduce --dtype bf16" "moe_dispatch_combine --dtype int32" \
        "multi_comm_groups" "allgather_matmul" "matmul_allreduce_rmsnorm --dtype bf16" \
        "allreduce_softmax --dtype fp16"; do
        set -- $cmd
        # Open MPI 4.1.4's osc/rdma (the default for MPI_Win_allocate on one node) names its
        # shared segment by communicator id, which disjoint groups share: their windows collide
        # (an unlink error, then wrong data). Groups other than "world" use osc/sm there.
        osc=()
        [ "$1" = multi_comm_groups ] && [ "$sh" = 0 ] && osc=(--mca osc sm)
        out=$(PTO_MPI_SHARED=$sh run -np "$np" ${osc[@]+"${osc[@]}"} "build/samples/$1" "${@:2}" \
          --backend mpi --check)
        if [ "$(grep -c 'check: PASS' <<<"$out")" -ne "$np" ]; then
          echo "$out"
          echo "mpi: $cmd on $np ranks (PTO_MPI_SHARED=$sh): not every rank passed"
          exit 1
        fi
      done
    done
  done
  # The pto::parallel samples on 2 ranks (a 1x2 mesh), on the shared and on the RMA path.
  for sh in 1 0; do
    for cmd in "sharded_mlp" "sharded_attention --dtype bf16"; do
      set -- $cmd
      out=$(PTO_MPI_SHARED=$sh run -np 2 "build/samples/$1" "${@:2}" --backend mpi --check)
      if [ "$(grep -c 'check: PASS' <<<"$out")" -ne 2 ]; then
        echo "$out"
        echo "mpi: $cmd on 2 ranks (PTO_MPI_SHARED=$sh): not every rank passed"
        exit 1
      fi
    done
  done
  PTO_MPI_PROGRESS=0 run -np 2 --mca osc pt2pt build/tests/test_mpi
  # Three ranks: two go on with a collective the third abandoned (its buffers must live on).
  run -np 3 build/tests/test_mpi -tc='*intact after its World*'
  # A setting that selects collective MPI calls, set on one rank only: an error on every rank
  # (when MPI starts), a non-zero exit, no hang.
  for var in PTO_MPI_SHARED PTO_MPI_PROGRESS; do
    rc=0
    out=$(run -np 1 env "$var=0" build/tests/test_mpi -tc=none : -np 1 build/tests/test_mpi \
      -tc=none 2>&1) || rc=$?
    if [ $rc -eq 0 ] || [ "$(grep -c "test_mpi: error: .*$var" <<<"$out")" -ne 2 ]; then
      echo "$out"
      echo "mpi: $var=0 on rank 0 only: rc $rc, want an error on both ranks"
      exit 1
    fi
  done
  out=$(PTO_MPI_PROGRESS=0 run -np 4 --mca osc pt2pt build/samples/collectives --backend mpi --check)
  [ "$(grep -c 'check: PASS' <<<"$out")" -eq 4 ] || { echo "$out"; exit 1; }
  # A bad PTO_MPI_* value (MPI starts while the flags are checked) and a rank count outside a
  # sample's PE limits are usage errors on every rank (exit 2, the variable named), not aborts.
  rc=0
  out=$(PTO_MPI_SHARED=2 run -np 2 -x PTO_MPI_SHARED build/samples/collectives --backend mpi 2>&1) ||
    rc=$?
  if [ $rc -eq 0 ] || [ "$(grep -c "error: .*PTO_MPI_SHARED: '2' is not a known value" <<<"$out")" -ne 2 ]; then
    echo "$out"
    echo "mpi: PTO_MPI_SHARED=2: rc $rc, want a usage error naming it on both ranks"
    exit 1
  fi
  rc=0
  out=$(run -np 3 build/samples/multi_comm_groups --backend mpi 2>&1) || rc=$?
  if [ $rc -eq 0 ] || [ "$(grep -c 'error: mpirun started 3 ranks' <<<"$out")" -ne 3 ]; then
    echo "$out"
    echo "mpi: multi_comm_groups on 3 ranks (it needs an even count): rc $rc, want exit 2"
    exit 1
  fi
  # Outside mpirun --backend mpi is a flag error (exit 2), not a crash.
  rc=0
  build/samples/collectives --backend mpi --check 2>/dev/null || rc=$?
  [ $rc -eq 2 ] || { echo "mpi: --backend mpi outside mpirun exited $rc, want 2"; exit 1; }
)

# A user's project (tests/consumer) built and run both ways: against build/ installed into a
# temporary prefix (find_package(ptojit CONFIG), then the same main.cpp through pkg-config), and
# with the source tree as its sub-project (add_subdirectory: only the libraries). The sub-project
# builds in build-consumer/, beside build/ and with its build type and warnings, so that ccache
# reuses build/'s objects (ccache rewrites paths relative to the compiler's working directory,
# which must then sit as deep in the tree as build/'s): under a minute, not ten.
consumer() (
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp" build-consumer' EXIT
  cmake --install build --prefix "$tmp/prefix" >/dev/null
  cmake -S tests/consumer -B "$tmp/installed" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$tmp/installed" -j "$(nproc)" >/dev/null
  "$tmp/installed/consumer"
  # shellcheck disable=SC2046 # pkg-config's output is a list of flags
  c++ -O1 tests/consumer/main.cpp -o "$tmp/pc_consumer" \
    $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs ptojit)
  "$tmp/pc_consumer"
  cmake -S tests/consumer -B "$tmp/sub" -DCMAKE_BUILD_TYPE=Release -DPTO_WERROR=ON \
    -DPTOJIT_SOURCE_DIR="$PWD" -DPTOJIT_BINARY_DIR="$PWD/build-consumer" >/dev/null
  cmake --build "$tmp/sub" -j "$(nproc)" >/dev/null
  "$tmp/sub/consumer"
  # Nothing of ptojit's own reaches the consumer's CTest.
  [ "$(ctest --test-dir "$tmp/sub" -N | grep -c 'Test #')" -eq 1 ] || {
    ctest --test-dir "$tmp/sub" -N
    echo "consumer: ptojit registered tests in the sub-project's CTest"
    exit 1
  }
)

stage bootstrap scripts/bootstrap.sh
stage format scripts/format.sh --check
stage tree scripts/check_tree.sh
stage build scripts/build.sh -DPTO_WERROR=ON
stage consumer consumer
# The two labels partition the tests (tests/CMakeLists.txt): every case runs exactly once.
stage ctest-quick ctest --test-dir build --output-on-failure -LE slow
stage ctest-slow ctest --test-dir build --output-on-failure -L slow
stage isa-avx2 isa_avx2
stage tsan scripts/tsan_runtime.sh
stage asan scripts/asan_tests.sh
stage guard-pages scripts/valgrind_tests.sh --guard-pages
stage valgrind scripts/valgrind_tests.sh
stage collectives scripts/check_collectives.sh
stage samples-pes scripts/check_samples_pes.sh
stage samples samples
stage mpi mpi_checks
# Last: the tests' verdict comes first. A change to .clang-tidy or tidy.sh re-checks everything.
case "${PTO_TIDY:-all}" in
all) stage tidy scripts/tidy.sh ;;
changed)
  if git diff --quiet "$(git merge-base main HEAD)" -- .clang-tidy scripts/tidy.sh; then
    stage tidy scripts/tidy.sh --changed main
  else
    stage tidy scripts/tidy.sh
  fi ;;
off) echo "==== stage tidy: skipped (PTO_TIDY=off)" ;;
*) echo "test.sh: PTO_TIDY must be all, changed or off, not '$PTO_TIDY'" >&2; exit 2 ;;
esac
