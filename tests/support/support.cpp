// support.cpp - See support.h.
#include "support/support.h"

#include "pto/env.h"

#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define PTO_RUNNING_ON_VALGRIND (RUNNING_ON_VALGRIND != 0)
#else
#define PTO_RUNNING_ON_VALGRIND false
#endif

#if defined(__SANITIZE_ADDRESS__)
#define PTO_ASAN true
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PTO_ASAN true
#endif
#endif
#ifndef PTO_ASAN
#define PTO_ASAN false
#endif

namespace support {

Tolerance tolerance(pto::DataType dt, OpClass cls) {
  switch (dt) {
  case pto::DT_FP32:
    return cls == OpClass::Basic ? Tolerance{1e-5, 1e-6} : Tolerance{1e-6, 1e-7};
  case pto::DT_FP16:
  case pto::DT_BF16:
    return {1e-2, 1e-3};
  case pto::DT_DOUBLE:
    return {1e-12, 1e-14};
  default:
    return {0, 0}; // ints and bool: exact
  }
}

std::string mismatch(const pto::HostTensor &got, const naive::Array &want, Tolerance tol) {
  std::ostringstream os;
  if (got.shape() != want.shape) {
    os << "shape mismatch: got rank " << got.shape().size() << " with " << got.numel()
       << " elements, want rank " << want.shape.size() << " with " << want.numel();
    return os.str();
  }
  int64_t bad = 0, worst_i = -1;
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.v[static_cast<size_t>(i)];
    if ((std::isnan(g) && std::isnan(w)) || g == w)
      continue;
    double err = std::fabs(g - w);
    double allowed = tol.rel * std::fabs(w) + tol.abs;
    if (!(err <= allowed)) { // NaN-safe
      ++bad;
      double excess = std::isnan(err) ? INFINITY : err / (allowed > 0 ? allowed : 1e-300);
      if (worst_i < 0 || excess > worst) {
        worst = excess;
        worst_i = i;
      }
    }
  }
  if (bad == 0)
    return "";
  os.precision(10);
  os << bad << " of " << got.numel() << " elements out of tolerance (rel " << tol.rel << ", abs "
     << tol.abs << "); worst at flat index " << worst_i << ": got " << got.get(worst_i) << ", want "
     << want.v[static_cast<size_t>(worst_i)];
  return os.str();
}

std::vector<pto::RunMode> run_modes() {
  if (env_flag("PTO_TEST_INTERPRET_ONLY"))
    return {pto::RunMode::Interpret};
  return {pto::RunMode::Interpret, pto::RunMode::Jit};
}

const char *mode_name(pto::RunMode m) { return m == pto::RunMode::Jit ? "jit" : "interpret"; }

pto::JitOptions opts(pto::RunMode m, std::vector<pto::TensorSpec> specs) {
  pto::JitOptions o;
  o.run_mode = m;
  o.specs = std::move(specs);
  return o;
}

uint64_t env_u64(const char *name, uint64_t def) {
  const pto::env::Var v{name, pto::env::Kind::Integer, {}, 0, INT64_MAX, false, "a test's count"};
  return static_cast<uint64_t>(pto::env::read_integer(v, {}).value_or(static_cast<int64_t>(def)));
}

bool env_flag(const char *name) {
  const pto::env::Var v{name, pto::env::Kind::Choice, {"0", "1"}, 0, 0, false, "a test's switch"};
  return pto::env::read_choice(v, {}) == "1";
}

std::vector<std::string> env_list(const char *name, const std::vector<std::string> &values) {
  const pto::env::Var v{name, pto::env::Kind::List, values, 0, 0, false, "a test's selection"};
  return pto::env::read_list(v, {}).value_or(std::vector<std::string>{});
}

std::string env_text(const char *name) {
  const pto::env::Var v{name, pto::env::Kind::Text, {}, 0, 0, false, "a test's path"};
  return pto::env::read_text(v).value_or("");
}

bool alloc_failure_aborts() { return PTO_ASAN || PTO_RUNNING_ON_VALGRIND; }

bool long_double_is_double() { return PTO_RUNNING_ON_VALGRIND; }

} // namespace support
