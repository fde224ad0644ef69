#!/usr/bin/env bash
# test.sh - The README's second command (and CI's): install what is missing, build with
# warnings as errors, run every test suite with CTest, then the flagship sample's checks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh -DPTO_WERROR=ON
ctest --test-dir build --output-on-failure
scripts/check_collectives.sh
for dt in fp32 fp16 bf16; do
  build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check
  build/samples/allreduce_softmax --pes 8 --dtype "$dt" --check --interpret
done
