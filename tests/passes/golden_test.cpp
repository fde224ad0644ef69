// golden_test.cpp - Golden tests of the middle of the pipeline: for a handful of kernels, the
// three dumps the pipeline writes (PTO_DUMP=ir,tiles,plan: the verified IR, the tile plan and
// the fusion plan) must equal tests/passes/golden/<kernel>.txt, so that a change which silently
// un-fuses softmax, splits layer_norm or reorders the allreduce fails with a diff.
//
// The expected files were generated, then reviewed line by line against the fusion model of
// passes/fuse.h (groups, row passes, per-row values, scratch, stores) and the tile rules of
// passes/tile_expand.h. After an intended change, regenerate them with
//   PTO_GOLDEN_UPDATE=1 build/tests/test_passes -tc='golden*'
// and review the diff (`git diff tests/passes/golden`) before committing it.
#include "pto/pto.h"

#include "passes/planned.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dist = pto::distributed;
using passes_test::plan;

namespace {

constexpr pto::DataType F32 = pto::DT_FP32;

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// A line diff of `want` -> `got` (longest common subsequence): "-" lines only in the expected
/// file, "+" lines only in the result, 2 lines of context around each change; each line is
/// numbered by its place in the merged listing.
std::string line_diff(const std::string &want, const std::string &got) {
  const auto a = lines_of(want), b = lines_of(got);
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> lcs(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::pair<char, std::string>> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ops.emplace_back(' ', a[i++]);
      ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      ops.emplace_back('+', b[j++]);
    } else {
      ops.emplace_back('-', a[i++]);
    }
  }
  std::string out;
  constexpr size_t kContext = 2;
  for (size_t k = 0; k < ops.size(); ++k) {
    bool near = false;
    for (size_t d = k >= kContext ? k - kContext : 0; d <= k + kContext && d < ops.size(); ++d)
      near = near || ops[d].first != ' ';
    if (near) {
      std::string num = std::to_string(k + 1);
      out += std::string(num.size() < 4 ? 4 - num.size() : 0, ' ') + num + " " + ops[k].first +
             " " + ops[k].second + "\n";
    }
  }
  return out;
}

/// The dumps of `c` as the pipeline writes them, one after the other.
std::string dumps(const pto::codegen::Compiled &c) {
  const auto &pp = *c.planned;
  return pp.printed + print_tiles(pp.program, pp.sites, pp.tiles) +
         print_plan(pp.program, pp.sites, pp.plan);
}

/// Compares `got` with golden/<name>.txt (PTO_GOLDEN_UPDATE=1: writes it instead).
void check_golden(const std::string &name, const std::string &got) {
  const std::string path = std::string(PTO_GOLDEN_DIR) + "/" + name + ".txt";
  if (support::env_flag("PTO_GOLDEN_UPDATE")) {
    std::ofstream(path) << got;
    MESSAGE("wrote " << path);
    return;
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path << " (generate it with PTO_GOLDEN_UPDATE=1)");
  std::stringstream want;
  want << in.rdbuf();
  const bool same = want.str() == got; // not CHECK(a == b): doctest would print both files
  CHECK_MESSAGE(same, "the dumps differ from "
                          << path << " (line, - expected, + got):\n"
                          << line_diff(want.str(), got)
                          << "If the change is intended, rerun with "
                             "PTO_GOLDEN_UPDATE=1 and review the file's diff.");
}

// ---- the kernels --------------------------------------------------------------------------

using Args = std::vector<pto::Tensor>;

void softmax_kernel(const Args &a) {
  pto::set_vec_tile_shapes(16, 256);
  pto::assemble(pto::softmax(a[0], -1), {0, 0}, a[1]);
}

void layer_norm_kernel(const Args &a) {
  pto::set_vec_tile_shapes(8, 128);
  pto::assemble(pto::layer_norm(a[0], -1, {.weight = a[1], .bias = a[2]}), {0, 0}, a[3]);
}

/// samples/allreduce_softmax.cpp's kernel on 2 PEs: a one-shot allreduce by hand (shmem_put
/// ADD into every PE, signal, wait), then a row softmax of the sum.
void allreduce_softmax_kernel(const Args &a) {
  const int n_pes = 2;
  pto::set_vec_tile_shapes(8, 128);
  auto acc = dist::create_shmem_tensor("world", n_pes, F32, {16, 128});
  auto me = dist::my_symbolic_pe("world");
  for (int p = 0; p < n_pes; ++p) {
    auto put = dist::shmem_put(a[0], {0, 0}, acc, p, {.put_op = dist::AtomicType::ADD});
    dist::shmem_signal(acc, p, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
  }
  auto ready = dist::shmem_wait_until(acc, me, n_pes, {.clear_signal = true, .pred = {a[0]}});
  auto sum = dist::shmem_get(acc, me, {.pred = {ready}});
  auto m = pto::amax(sum, -1, {.keepdim = true});
  auto e = pto::exp(sum - m);
  pto::assemble(e / pto::sum(e, -1, {.keepdim = true}), {0, 0}, a[1]);
}

/// Two allreduces with fusion 1, deferred and traced as one packed exchange at the first use.
void allreduce_fused_kernel(const Args &a) {
  pto::set_vec_tile_shapes(16, 64);
  auto s0 = dist::allreduce(a[0], dist::Reduction::SUM, {.fusion = 1});
  auto s1 = dist::allreduce(a[1], dist::Reduction::SUM, {.fusion = 1});
  pto::assemble(pto::add(s0, s1), {0, 0}, a[2]);
}

void matmul_kernel(const Args &a) {
  pto::set_vec_tile_shapes(16, 48);
  pto::set_cube_tile_shapes({16, 32}, {16, 64}, {16, 48});
  auto m = pto::matmul(a[0], a[1], F32);
  pto::assemble(pto::relu(pto::add(m, a[2])), {0, 0}, a[3]);
}

void loop_cond_kernel(const Args &a) {
  pto::set_vec_tile_shapes(1, 32);
  for (auto i : pto::loop(4)) {
    auto row = pto::view(a[0], {1, 32}, {i, 0});
    if (pto::cond(a[1].at({i}) > 0))
      pto::assemble(pto::exp(row), {i, 0}, a[2]);
    else
      pto::assemble(pto::neg(row), {i, 0}, a[2]);
  }
}

} // namespace

TEST_CASE("golden: softmax is one group of 3 row passes") {
  check_golden("softmax",
               dumps(plan("softmax", {{F32, {64, 256}}, {F32, {64, 256}}}, softmax_kernel)));
}

TEST_CASE("golden: layer_norm with weight and bias is one group of 3 row passes") {
  check_golden(
      "layer_norm",
      dumps(plan("layer_norm", {{F32, {32, 128}}, {F32, {128}}, {F32, {128}}, {F32, {32, 128}}},
                 layer_norm_kernel)));
}

TEST_CASE("golden: a one-shot allreduce by hand, then a fused softmax (the flagship sample)") {
  check_golden("allreduce_softmax",
               dumps(plan("allreduce_softmax", {{F32, {16, 128}}, {F32, {16, 128}}},
                          allreduce_softmax_kernel, 2)));
}

TEST_CASE("golden: two fused allreduces are packed into one exchange at the trace's end") {
  check_golden("allreduce_fused",
               dumps(plan("allreduce_fused", {{F32, {16, 64}}, {F32, {16, 64}}, {F32, {16, 64}}},
                          allreduce_fused_kernel, 2)));
}

TEST_CASE("golden: a matmul is lowered on its own; its epilogue fuses") {
  check_golden("matmul_bias_relu",
               dumps(plan("matmul_bias_relu",
                          {{F32, {32, 64}}, {F32, {64, 48}}, {F32, {32, 48}}, {F32, {32, 48}}},
                          matmul_kernel)));
}

TEST_CASE("golden: a loop with a run-time cond: one region per path") {
  check_golden("loop_cond",
               dumps(plan("loop_cond", {{F32, {4, 32}}, {pto::DT_INT32, {4}}, {F32, {4, 32}}},
                          loop_cond_kernel)));
}
