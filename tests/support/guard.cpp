// guard.cpp - See guard.h.
#include "support/guard.h"

namespace support {

pto::HostTensor guarded(pto::DataType dt, std::vector<int64_t> shape) {
  return pto::HostTensor(dt, std::move(shape), pto::HostTensorGuard::Canary);
}

std::string guard_damage(const std::vector<const pto::HostTensor *> &ts) {
  std::string out;
  for (size_t k = 0; k < ts.size(); ++k) {
    std::string d = ts[k]->guard_damage();
    if (!d.empty())
      out += (out.empty() ? "" : "; ") + ("tensor " + std::to_string(k) + ": " + d);
  }
  return out;
}

} // namespace support
