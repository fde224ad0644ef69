// guard.h - Out-of-bounds write detection for kernel tests: tensors with canary bytes around
// their data (pto::HostTensorGuard::Canary, host_tensor.h) and checks, after a kernel run, that
// no canary changed. Independent of PTO_HOST_TENSOR_GUARD, so the check runs in every build.
//
//   auto x = support::guarded(pto::DT_FP32, {4, 8}), y = support::guarded(pto::DT_FP32, {4, 8});
//   support::run_guarded(kernel, x, y);   // kernel(x, y), then CHECK that x's and y's guards hold
#pragma once

#include "pto/host_tensor.h"

#include <doctest/doctest.h>

#include <string>
#include <type_traits>
#include <vector>

namespace support {

/// A zero-filled tensor with canary bytes before and after its data.
pto::HostTensor guarded(pto::DataType dt, std::vector<int64_t> shape);

/// "" when every tensor's guard is intact; else one "tensor K: ..." clause per damaged tensor
/// (K = position in `ts`). Tensors without a guard count as intact.
std::string guard_damage(const std::vector<const pto::HostTensor *> &ts);

/// Calls `kernel(args...)` and then CHECKs (doctest) that the guard of every HostTensor argument
/// is intact. Other arguments (kernel constants) are passed through unchecked.
template <class Kernel, class... Args> void run_guarded(Kernel &kernel, Args &...args) {
  kernel(args...);
  std::vector<const pto::HostTensor *> ts;
  auto collect = [&](const auto &a) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, pto::HostTensor>)
      ts.push_back(&a);
  };
  (collect(args), ...);
  CHECK_MESSAGE(guard_damage(ts).empty(), guard_damage(ts));
}

} // namespace support
