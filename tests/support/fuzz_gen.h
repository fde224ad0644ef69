// fuzz_gen.h - The fuzz target's case generator (tests/e2e/fuzz_test.cpp, issue 8): seeded
// random kernels with random shapes, valid shapes, view offsets and sizes (concrete, run-time
// via Tensor::at and DYNAMIC dims), vec and cube tiles, dtypes, loops with extreme bounds and
// steps, shmem primitives and collectives on 1-8 PEs, HostTensors and kernel-call specs, with
// hostile values drawn among them (negative, zero, huge, near INT64_MAX, 1 << 40 dims, valid >
// shape, windows outside their tensor, mismatched dtypes).
//
// Every case carries its own oracle, computed here without ptojit: the final contents of every
// kernel argument when the documented rules accept the case (the property model of
// property_gen.h for "prop" cases, plain integer arithmetic elsewhere: every other template uses
// small integer data, so the expected values are exact), or the typed error the rules demand
// (its class and the op that must report it). Cases the rules leave open (a huge but legal size
// that an executor may refuse) accept either. Templates: see `kinds()`.
#pragma once

#include "pto/jit.h"

#include "support/property_gen.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fuzz {

/// What a case must do.
enum class Expect {
  Values,        ///< succeed, every argument ending as `want`
  Throw,         ///< throw a typed pto::Error (one of error_types, reported by error_op)
  ValuesOrThrow, ///< either of the above (the rules leave it open; the error may be any op's)
};

/// One generated case: a kernel (or a host-only action), its arguments per PE and its oracle.
struct Case {
  uint64_t seed = 0;                ///< the campaign seed (PTO_FUZZ_SEED)
  uint64_t index = 0;               ///< the case's number in the campaign
  std::string kind;                 ///< the template: "prop", "window", "valid", "loop", ...
  std::string feature;              ///< what was drawn hostile ("ok" when nothing was)
  std::vector<std::string> listing; ///< what the case does, one step per line (for failures)

  int n_pes = 0; ///< 0: one direct kernel call; else a World of n_pes PEs
  int64_t deadlock_timeout_ms = 1000;
  std::vector<pto::TensorSpec> specs;       ///< JitOptions::specs
  std::vector<std::vector<prop::Val>> args; ///< [pe][param]: initial contents (one row if n_pes 0)
  /// The traced kernel body, given the tensor parameters.
  std::function<void(const std::vector<pto::Tensor> &)> body;
  /// A host-only case (no kernel; args and body unused): runs this and must throw or not.
  std::function<void()> host;

  Expect expect = Expect::Values;
  std::vector<std::vector<prop::Val>> want; ///< [pe][param]: final contents (Values cases)
  std::vector<std::string> error_types;     ///< Throw: accepted classes ("ShapeError"); {}: any
  std::string error_op;                     ///< Throw: the op that must report it; "": any
  /// Throw: the case also holds a huge but legal size (an open rule) that an executor may try
  /// to allocate, and refuse, before the run-time check that fails (the JIT allocates locals at
  /// kernel entry): any typed error is accepted, and so is the refused allocation.
  bool open_alloc = false;

  /// The failure-class key prefix of this case: "kind/feature".
  std::string klass() const { return kind + "/" + feature; }
};

/// The seed of case `index` of campaign `seed` (mixed so that neighbouring cases differ).
uint64_t case_seed(uint64_t seed, uint64_t index);

/// Case `index` of campaign `seed` (deterministic).
Case generate(uint64_t seed, uint64_t index);

/// The templates generate draws from, in order.
const std::vector<std::string> &kinds();

/// A readable listing of the case: class, PEs, arguments, steps and the expected outcome.
std::string describe(const Case &c);

/// `t` as an exact Val (every element's err 0), for comparing executors and for canaries.
prop::Val from_host(const pto::HostTensor &t);

/// The class name of a ptojit error ("ShapeError", "DeadlockError", ... "Error").
std::string error_class(const pto::Error &e);

} // namespace fuzz
