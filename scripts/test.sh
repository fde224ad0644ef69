#!/usr/bin/env bash
# test.sh - The README's second command (and CI's): install what is missing, build with
# warnings as errors, run every test suite with CTest, the runtime tests again under
# ThreadSanitizer, then every sample's --check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh -DPTO_WERROR=ON
ctest --test-dir build --output-on-failure
scripts/tsan_runtime.sh
scripts/check_collectives.sh
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
