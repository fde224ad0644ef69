#!/usr/bin/env bash
# tsan_runtime.sh - Builds the runtime and its tests with ThreadSanitizer (the runtime needs no
# LLVM, so this is a small, separate build) and runs them. Any data race fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-tsan
mkdir -p "$out"
g++ -std=c++20 -O1 -g -fsanitize=thread -pthread -Wall -Wextra -Wno-tsan \
  -Iruntime/include -Ibase/include -Iruntime/src -Itests \
  runtime/src/*.cpp runtime/src/backends/*.cpp runtime/src/transport/*.cpp base/src/*.cpp tests/runtime/*_test.cpp \
  tests/support/doctest_main.cpp -lfmt -o "$out/test_runtime_tsan"
TSAN_OPTIONS="halt_on_error=1" "$out/test_runtime_tsan"
