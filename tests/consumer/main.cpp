// main.cpp - A user's program: one kernel, y = exp(x) * 2 - x with x in [-4, 4), run on 2 PEs
// JIT-compiled and once in the interpreter, each result checked against std::exp in double.
// Prints "consumer: PASS" and returns 0, or names the first wrong element and returns 1.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace {
constexpr int64_t kRows = 16, kCols = 100;

bool check(const pto::HostTensor &x, const pto::HostTensor &y, const char *what) {
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    const double xi = x.data_as<float>()[i];
    const double want = std::exp(xi) * 2.0 - xi;
    const double got = y.data_as<float>()[i];
    if (std::fabs(got - want) > 1e-5 * std::fabs(want) + 1e-6) {
      std::printf("consumer: %s: y[%lld] = %.9g, want %.9g\n", what, static_cast<long long>(i), got,
                  want);
      return false;
    }
  }
  return true;
}
} // namespace

int main() {
  auto kernel = [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(8, 64);
    pto::assemble(pto::exp(x) * 2.0 - x, {0, 0}, y);
  };
  auto jit = pto::jit("consumer_jit", kernel);
  auto interp = pto::jit("consumer_interp", kernel, {.run_mode = pto::RunMode::Interpret});

  std::vector<pto::HostTensor> xs, ys;
  for (int pe = 0; pe < 2; ++pe) {
    xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{kRows, kCols});
    ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{kRows, kCols});
    for (int64_t i = 0; i < kRows * kCols; ++i)
      xs.back().data_as<float>()[i] = -4.0f + 8.0f * float((i * 37 + pe) % 1000) / 1000.0f;
  }
  pto::runtime::World world(2);
  world.run([&](int pe) { jit(xs[size_t(pe)], ys[size_t(pe)]); });
  bool ok = check(xs[0], ys[0], "jit, PE 0") && check(xs[1], ys[1], "jit, PE 1");
  pto::HostTensor y(pto::DT_FP32, {kRows, kCols});
  interp(xs[0], y);
  ok = ok && check(xs[0], y, "interpreter");
  std::puts(ok ? "consumer: PASS" : "consumer: FAIL");
  return ok ? 0 : 1;
}
