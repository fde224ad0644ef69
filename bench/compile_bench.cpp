// compile_bench.cpp - JIT compile time against program size (issue 8): kernels of N chained ops
// of one kind (reshape, loop, elementwise add), traced and compiled once each; prints
// "kind N ops seconds" per case. Not a Google Benchmark suite: one compile per size is the
// measurement (the in-memory JIT cache is bypassed by a distinct constant per run, the on-disk
// one by PTO_CACHE=0 unless PTO_CACHE is set).
//
//   build/bench/compile_bench [kind ...] [--sizes 250,500,1000,2000]
#include "pto/pto.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

double compile_seconds(const std::string &kind, int n, double c) {
  auto k = pto::jit("compile_" + kind, [&](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    if (kind == "reshape") {
      pto::Tensor t = pto::add(x, c);
      for (int i = 0; i < n; ++i)
        t = i % 2 ? pto::reshape(t, {4, 8}) : pto::reshape(t, {8, 4});
      if (n % 2)
        t = pto::reshape(t, {4, 8});
      pto::assemble(t, {0, 0}, y);
    } else if (kind == "loop") {
      for (int i = 0; i < n; ++i)
        for (auto j : pto::loop(0, 1)) {
          (void)j;
          pto::assemble(pto::add(x, c + i), {0, 0}, y);
        }
    } else { // add: a chain of elementwise ops
      pto::Tensor t = x;
      for (int i = 0; i < n; ++i)
        t = pto::add(t, c);
      pto::assemble(t, {0, 0}, y);
    }
  });
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  auto t0 = std::chrono::steady_clock::now();
  k(x, y);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char **argv) {
  ::setenv("PTO_CACHE", "0", 0); // compile time, not a load from an earlier run's cache
  std::vector<std::string> kinds;
  std::vector<int> sizes = {250, 500, 1000, 2000};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream ss(argv[++i]);
      for (std::string s; std::getline(ss, s, ',');)
        sizes.push_back(std::atoi(s.c_str()));
    } else {
      kinds.push_back(a);
    }
  }
  if (kinds.empty())
    kinds = {"reshape", "loop", "add"};
  double c = 1;
  for (auto &kind : kinds)
    for (int n : sizes) {
      double s = compile_seconds(kind, n, c++);
      std::printf("%-8s %6d ops %8.2f s\n", kind.c_str(), n, s);
      std::fflush(stdout);
    }
}
