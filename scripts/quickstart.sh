#!/usr/bin/env bash
# quickstart.sh - The README's first command: install what is missing, build, then run the
# flagship sample (8 PEs, --check). Extra arguments go to the sample.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
build/samples/allreduce_softmax --pes 8 --check "$@"
