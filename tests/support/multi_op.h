// multi_op.h - Runs many single-result tensor expressions in ONE kernel (each JIT compile costs
// ~100 ms): result k is flattened with pto::reshape, cast to DT_DOUBLE (exact for every dtype
// the tests use) and assembled into row k of a [K, N] output, then compared with its expected
// naive::Array under its tolerance.
#pragma once

#include "pto/pto.h"

#include "support/naive.h"
#include "support/support.h"

#include <functional>
#include <string>
#include <vector>

namespace support {

/// One expression of the kernel's two inputs (a, b), with its expected value.
struct Case {
  std::string name;
  std::function<pto::Tensor(const pto::Tensor &a, const pto::Tensor &b)> f;
  naive::Array want; ///< expected values and shape (the result must be fully valid)
  Tolerance tol = {};
};

/// Traces every case into one kernel with vec tile `tile` and runs it in mode `m` on (a, b).
/// Returns one line per failing case ("name: shape ..." or the mismatch), "" when all pass.
std::string run_cases(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                      const std::vector<Case> &cases, const std::vector<int64_t> &tile,
                      std::vector<pto::TensorSpec> specs = {});

} // namespace support
