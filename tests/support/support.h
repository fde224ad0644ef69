// support.h - Shared test settings: the one tolerance table, the run modes every kernel test
// covers, and a readable element-wise comparison against naive (naive.h) expectations.
#pragma once

#include "pto/jit.h"

#include "support/naive.h"

#include <cstdint>
#include <string>
#include <vector>

namespace support {

/// How close a result must be: |got - want| <= rel * |want| + abs, per element.
struct Tolerance {
  double rel = 0;
  double abs = 0;
};

/// Which kind of op produced the value (transcendentals get the vector-math bound).
enum class OpClass { Basic, Transcendental };

/// THE tolerance table, used by every numeric test:
///   fp32   1e-5 relative for basic ops; 1e-6 (a few ULP, SLEEF u10 is 1 ULP) for transcendentals
///   fp16, bf16  1e-2 relative (inputs and every op result are rounded to 11 / 8 bits)
///   fp64   1e-12 relative
///   ints, bool  exact
/// The small absolute term covers results that cancel to (near) zero, where a relative bound
/// is meaningless; it is far below one unit in the last place of the operands used by tests.
Tolerance tolerance(pto::DataType dt, OpClass cls = OpClass::Basic);

/// "" when every element of `got` is within `tol` of `want` (NaN matches NaN, equal infinities
/// match); otherwise a message naming the count of bad elements and the worst one.
std::string mismatch(const pto::HostTensor &got, const naive::Array &want, Tolerance tol);

/// The run modes kernel tests cover: {Interpret, Jit}, or only Interpret when the environment
/// has PTO_TEST_INTERPRET_ONLY=1 (while the LLVM backend is unavailable).
std::vector<pto::RunMode> run_modes();
/// "interpret" or "jit", for SUBCASE names.
const char *mode_name(pto::RunMode m);

/// JitOptions with the given run mode (and optional specs).
pto::JitOptions opts(pto::RunMode m, std::vector<pto::TensorSpec> specs = {});

/// The test suites' own PTO_* variables, read by the library's one parser (pto/env.h): a bad
/// value is a pto::ArgumentError naming the variable, the value and what is accepted.
/// The unsigned decimal value of environment variable `name`, or `def` when unset or empty.
uint64_t env_u64(const char *name, uint64_t def);
/// True when `name` is 1, false when it is 0, unset or empty.
bool env_flag(const char *name);
/// The items of comma-separated list `name` (each one of `values`); empty when unset or empty.
std::vector<std::string> env_list(const char *name, const std::vector<std::string> &values);
/// The text of `name` (a path), or empty when unset.
std::string env_text(const char *name);

/// True when this process's allocator aborts, instead of throwing std::bad_alloc, on a request
/// it cannot serve: built with AddressSanitizer (scripts/asan_tests.sh) or run under valgrind
/// (scripts/valgrind_tests.sh). A case that provokes an allocation failure skips itself there:
///   TEST_CASE("..." * doctest::skip(support::alloc_failure_aborts()))
bool alloc_failure_aborts();
/// True under valgrind, whose x87 emulation computes long double at double precision: a case
/// whose expected values need long double skips itself the same way.
bool long_double_is_double();

} // namespace support
