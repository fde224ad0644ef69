// multi_op.cpp - See multi_op.h.
#include "support/multi_op.h"

#include <algorithm>

namespace support {

std::string run_cases(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                      const std::vector<Case> &cases, const std::vector<int64_t> &tile,
                      std::vector<pto::TensorSpec> specs) {
  int64_t width = 1;
  for (auto &c : cases)
    width = std::max(width, c.want.numel());
  const auto k = static_cast<int64_t>(cases.size());
  pto::HostTensor out(pto::DT_DOUBLE, {k, width});
  std::string report;
  auto kernel = pto::jit(
      "cases",
      [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor to) {
        pto::set_vec_tile_shapes(tile);
        for (int64_t i = 0; i < k; ++i) {
          const Case &c = cases[static_cast<size_t>(i)];
          pto::Tensor r = c.f(ta, tb);
          std::vector<int64_t> got;
          for (auto &d : r.shape())
            got.push_back(d.is_concrete() ? d.concrete() : -1);
          if (got != c.want.shape) {
            report += c.name + ": result shape " + pto::str(r.shape()) + " differs\n";
            continue;
          }
          auto flat = pto::cast(pto::reshape(r, {1, c.want.numel()}), pto::DT_DOUBLE);
          pto::assemble(flat, {i, 0}, to);
        }
      },
      opts(m, std::move(specs)));
  kernel(a, b, out);
  for (int64_t i = 0; i < k; ++i) {
    const Case &c = cases[static_cast<size_t>(i)];
    pto::HostTensor got(pto::DT_DOUBLE, c.want.shape);
    for (int64_t j = 0; j < c.want.numel(); ++j)
      got.set(j, out.get(i * width + j));
    std::string mm = mismatch(got, c.want, c.tol);
    if (!mm.empty())
      report += c.name + ": " + mm + "\n";
  }
  return report;
}

} // namespace support
