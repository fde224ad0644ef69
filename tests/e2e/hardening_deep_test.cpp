// hardening_deep_test.cpp - User-sized structures that once meant one stack frame per element
// (issue 8): long fused op chains, deep symbolic expressions, expressions that double
// themselves, deep loop nests and nested element reads. (Ranks are bounded by the ops: 1 to 4.)
// Each runs on a thread with a set stack size (pthread attributes), in both run modes where a
// kernel runs, and either gives the plain-C++ result or the documented typed error at this file's
// line.
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <pthread.h>
#include <string>

using doctest::Contains;

namespace {

constexpr size_t kSmallStack = 256 * 1024;       // far below what per-op recursion needed
constexpr size_t kNormalStack = 8 * 1024 * 1024; // the usual main-thread default

/// Runs `fn` on a new thread with a `stack_bytes` stack and rethrows what it threw.
void on_stack(size_t stack_bytes, const std::function<void()> &fn) {
  struct Job {
    const std::function<void()> *fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, stack_bytes) == 0);
  pthread_t t;
  auto body = [](void *p) -> void * {
    auto *j = static_cast<Job *>(p);
    try {
      (*j->fn)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  REQUIRE(pthread_create(&t, &attr, body, &job) == 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  if (job.error)
    std::rethrow_exception(job.error);
}

/// Step k of the op chain, in the DSL and on the host (fp32, as the kernel computes).
pto::Tensor chain_step(int k, const pto::Tensor &t, const pto::Tensor &x) {
  switch (k % 4) {
  case 0:
    return t + 1.0;
  case 1:
    return t * 0.5;
  case 2:
    return t - x;
  default:
    return -t;
  }
}
float chain_step(int k, float t, float x) {
  switch (k % 4) {
  case 0:
    return t + 1.0f;
  case 1:
    return t * 0.5f;
  case 2:
    return t - x;
  default:
    return -t;
  }
}

/// A kernel applying `n` chained elementwise ops to x (one fused group's worth and more), run
/// on a `stack_bytes` thread; checks every element against the host chain.
void run_chain(pto::RunMode mode, int n, size_t stack_bytes) {
  on_stack(stack_bytes, [&] {
    auto k = pto::jit(
        "deep_chain",
        [n](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 16);
          pto::Tensor t = x;
          for (int i = 0; i < n; ++i)
            t = chain_step(i, t, x);
          pto::assemble(t, {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {5, 19}), y(pto::DT_FP32, {5, 19}); // row and column tails
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, static_cast<double>(i % 7) - 3.0);
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto xi = static_cast<float>(x.get(i));
      float want = xi;
      for (int s = 0; s < n; ++s)
        want = chain_step(s, want, xi);
      REQUIRE(y.get(i) == static_cast<double>(want));
    }
  });
}

/// `n` terms of `term` summed left to right, as a loop in user code builds them.
pto::SymbolicScalar sum_of(const pto::SymbolicScalar &term, int n) {
  pto::SymbolicScalar s = term;
  for (int i = 1; i < n; ++i)
    s = s + term;
  return s;
}

/// `term` doubled `times` times (`s = s + s`): a DAG of `times` nodes, 2^times as a tree.
pto::SymbolicScalar doubled(const pto::SymbolicScalar &term, int times) {
  pto::SymbolicScalar s = term;
  for (int i = 0; i < times; ++i)
    s = s + s;
  return s;
}

/// A kernel of `depth` nested one-trip pto::loops around y = x + 1.
auto nest_kernel(const char *name, int depth, pto::RunMode mode) {
  return pto::jit(
      name,
      [depth](pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(1, 8);
        std::function<void(int)> nest = [&](int d) {
          if (d == 0) {
            pto::assemble(x + 1.0, {0, 0}, y);
            return;
          }
          for (auto i : pto::loop(1)) {
            (void)i;
            nest(d - 1);
          }
        };
        nest(depth);
      },
      support::opts(mode));
}
} // namespace

TEST_CASE("a chain of 3000 fused elementwise ops lowers and runs on a 256 KiB stack") {
  // One stack frame per fused op needed ~2 KiB each: 3000 ops needed ~6 MiB.
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    run_chain(mode, 3000, kSmallStack);
  }
}

TEST_CASE("a chain of 20000 elementwise ops runs on an 8 MiB stack (interpreter)") {
  run_chain(pto::RunMode::Interpret, 20000, kNormalStack);
}

TEST_CASE("a 100000-term symbolic sum prints, compares, hashes, evaluates and frees iteratively") {
  on_stack(kSmallStack, [] {
    const int n = 100000;
    pto::SymbolicScalar nn("N");
    pto::SymbolicScalar s = sum_of(nn, n);
    CHECK(s.expr().nodes == 2 * static_cast<uint64_t>(n) - 1);
    // Printed as "(((N + N) + N) ... + N)": n - 1 opening parens, then N, then n - 1 " + N)".
    std::string want(static_cast<size_t>(n - 1), '(');
    want += "N";
    for (int i = 1; i < n; ++i)
      want += " + N)";
    CHECK(s.str() == want);
    pto::SymbolicScalar again = sum_of(nn, n); // equal structure, distinct nodes
    CHECK(s.same_as(again));
    CHECK(s.hash() == again.hash());
    CHECK_FALSE(s.same_as(sum_of(nn, n - 1) + 1));
    CHECK(pto::evaluate(s, [](const pto::SymExpr &) { return int64_t{3}; }) == 3 * n);
    CHECK((s - s).is_concrete()); // folding compares the operands
    // Unary chains too; then every tree is released here, on the small stack.
    pto::SymbolicScalar neg = nn;
    for (int i = 0; i < n; ++i)
      neg = -neg;
    CHECK(pto::evaluate(neg, [](const pto::SymExpr &) { return int64_t{5}; }) == 5);
  });
}

TEST_CASE("a loop bound that is a 30000-term sum of a DYNAMIC dim runs in both run modes") {
  constexpr int n = 30000;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    on_stack(kSmallStack, [&] {
      auto k = pto::jit(
          "deep_bound",
          [](pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(1, 8);
            pto::SymbolicScalar rows = x.shape(0);
            // n * rows - (n - 1) * rows - 2 = rows - 2, as one deep expression.
            auto stop = sum_of(rows, n) - (n - 1) * rows - 2;
            for (auto i : pto::loop(stop))
              pto::assemble(pto::view(x, {1, 13}, {i, 0}) * 2.0, {i, 0}, y);
          },
          support::opts(mode, {{{pto::DYNAMIC, 13}}, {{pto::DYNAMIC, 13}}}));
      pto::HostTensor x(pto::DT_FP32, {5, 13}), y(pto::DT_FP32, {5, 13});
      for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, static_cast<double>(i));
      y.fill(-1);
      k(x, y);
      for (int64_t i = 0; i < y.numel(); ++i) // rows 0..2 doubled, rows 3..4 untouched
        REQUIRE(y.get(i) == (i / 13 < 3 ? 2.0 * static_cast<double>(i) : -1.0));
    });
  }
}

TEST_CASE("an expression that doubles itself is bounded: str() is cut, an op gets SymbolicError") {
  on_stack(kSmallStack, [] {
    pto::SymbolicScalar nn("N");
    pto::SymbolicScalar s = doubled(nn, 64); // 2^65 - 1 nodes written out
    CHECK(s.expr().nodes >= pto::kMaxSymNodes);
    const std::string printed = s.str();
    CHECK(printed.size() < 16 * pto::kMaxSymNodes);
    CHECK(printed.substr(printed.size() - 3) == "...");
    // Each shared node is visited once: these are linear in the 65 distinct nodes.
    CHECK(s.same_as(doubled(nn, 64)));
    CHECK(s.hash() == doubled(nn, 64).hash());
    CHECK(pto::evaluate(s, [](const pto::SymExpr &) { return int64_t{1}; }) == 0); // 2^64 wraps
    CHECK(pto::evaluate(doubled(nn, 20), [](const pto::SymExpr &) { return int64_t{3}; }) ==
          3 * (int64_t{1} << 20));
  });
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "doubled_bound",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto stop = doubled(x.shape(0), 40);
          for (auto i : pto::loop(stop)) // the loop's own line is reported
            pto::assemble(pto::view(x, {1, 8}, {i, 0}), {i, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 8}}, {{pto::DYNAMIC, 8}}}));
    pto::HostTensor x(pto::DT_FP32, {2, 8}), y(pto::DT_FP32, {2, 8});
    CHECK_THROWS_WITH_AS(k(x, y), Contains("hardening_deep_test.cpp"), pto::SymbolicError);
    CHECK_THROWS_WITH_AS(k(x, y), Contains("loop: a symbolic expression of"), pto::SymbolicError);
  }
}

TEST_CASE("loops nested deeper than kMaxLoopDepth are a CompileError at the loop") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = nest_kernel("deep_nest", pto::kMaxLoopDepth + 1, mode);
    pto::HostTensor x(pto::DT_FP32, {1, 8}), y(pto::DT_FP32, {1, 8});
    CHECK_THROWS_WITH_AS(k(x, y), Contains("hardening_deep_test.cpp"), pto::CompileError);
    CHECK_THROWS_WITH_AS(k(x, y), Contains("loop: 64 pto::loop levels are already open"),
                         pto::CompileError);
  }
  // kMaxLoopDepth loops are fine, in both run modes.
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = nest_kernel("nest_64", pto::kMaxLoopDepth, mode);
    pto::HostTensor x(pto::DT_FP32, {1, 8}), y(pto::DT_FP32, {1, 8});
    x.fill(2.0);
    k(x, y);
    CHECK(y.get(7) == 3.0);
  }
}

TEST_CASE("element reads nested deeper than kMaxReadNesting are a SymbolicError at the read") {
  auto k = pto::jit("deep_reads", [](pto::Tensor idx, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    pto::SymbolicScalar i = 0;
    for (uint32_t d = 0; d <= pto::kMaxReadNesting; ++d)
      i = idx.at({i});
    pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {0, 0}, y);
    (void)i;
  });
  pto::HostTensor idx(pto::DT_INT32, {4}), y(pto::DT_FP32, {1, 8});
  CHECK_THROWS_WITH_AS(k(idx, y), Contains("hardening_deep_test.cpp"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(k(idx, y), Contains("at: element reads nest 65 deep"), pto::SymbolicError);
}

TEST_CASE("element reads nested kMaxReadNesting deep run in both run modes") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    on_stack(kSmallStack, [&] {
      auto k = pto::jit(
          "nested_reads",
          [](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(1, 8);
            pto::SymbolicScalar i = 0;
            for (uint32_t d = 0; d < pto::kMaxReadNesting; ++d)
              i = idx.at({i}); // idx = [1, 2, 3, 0]: 64 steps from 0 come back to 0
            pto::assemble(pto::view(x, {1, 8}, {i + 1, 0}), {0, 0}, y);
          },
          support::opts(mode));
      pto::HostTensor idx(pto::DT_INT32, {4}), x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {1, 8});
      for (int64_t j = 0; j < 4; ++j)
        idx.set(j, static_cast<double>((j + 1) % 4));
      for (int64_t j = 0; j < x.numel(); ++j)
        x.set(j, static_cast<double>(j));
      k(idx, x, y);
      for (int64_t c = 0; c < 8; ++c)
        REQUIRE(y.get(c) == static_cast<double>(8 + c)); // row 1
    });
  }
}
