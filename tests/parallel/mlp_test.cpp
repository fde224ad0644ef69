// mlp_test.cpp - Issue 12's MLP (mesh dp x mp; matmul, gelu, matmul with k split, softmax,
// assemble) on 8 PEs against the same program on 1 PE. test_mpi compiles this file too and runs
// it on the MPI backend with one PE per rank (support/pe_world.h): the mesh is then 1 x 2 or
// 2 x 2 for 2 or 4 ranks.
#include "pto/parallel.h"

#include "parallel/sharded.h"

#include <doctest/doctest.h>

namespace par = pto::parallel;

namespace {

/// dp x mp for n PEs: 2 x 4 for 8 (the mesh), 2 x 2 for 4, 1 x 2 for 2.
par::Mesh mesh_for(int n) {
  const int64_t dp = n >= 4 ? 2 : 1;
  return par::Mesh({dp, n / dp}, {"dp", "mp"});
}

} // namespace

TEST_CASE("parallel: the MLP of issue 12 on dp x mp PEs equals one PE") {
  const int n = support::world_pes(8);
  const par::Mesh mesh = mesh_for(n);
  const int dp = int(mesh.size(0)), mp = int(mesh.size(1));
  const int64_t batch = 16, hidden = 32, inner = 64, out = 16;
  auto body = [mesh, dp, mp](pto::Tensor x, pto::Tensor w1, pto::Tensor w2, pto::Tensor y) {
    sharded::tiles();
    auto xs = par::shard(x, mesh, {"dp", {}});        // or MindSpore's ((dp, 1), (1, mp))
    auto h = par::matmul(xs, w1, {{dp, 1}, {1, mp}}); // m on dp, n on mp
    auto a = par::gelu(h);                            // follows h: [16@dp, 64@mp]
    auto o = par::matmul(a, w2, {{dp, mp}, {mp, 1}}); // k split: Partial(sum) on mp
    CHECK(o.layout().to_string() ==
          std::string(dp > 1 ? "[16@dp, 16]" : "[16, 16]") + (mp > 1 ? " {P(sum)@mp}" : ""));
    par::assemble(par::softmax(o, -1), {0, 0}, y); // allreduce, softmax, my rows
  };
  std::vector<pto::HostTensor> in{sharded::data({batch, hidden}, 21),
                                  sharded::data({hidden, inner}, 22),
                                  sharded::data({inner, out}, 23)};
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit("mlp", body, support::opts(mode));
    pto::runtime::World one(1);
    auto oracle = sharded::run<3>(one, 1, k, in, {batch, out}, true)[0];
    auto world = support::make_world(n);
    auto outs = sharded::run<3>(*world, n, k, in, {batch, out});
    // PE p holds the rows of its dp coordinate (p / mp) and writes exactly those; the rest of
    // its output stays zero. Tolerance: o's k = 64 terms are summed in mp blocks instead of one
    // run (fp32 reassociation, |o| < 8 here: |delta o| < 64 * 2^-24 * 64 ~ 2.5e-4 at worst, far
    // less in practice), and softmax's relative error is about |delta o|: 1e-4 relative.
    const int64_t rows = batch / dp;
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      const int64_t r0 = (p / mp) * rows;
      int bad = 0;
      for (int64_t i = 0; i < batch * out; ++i) {
        const int64_t r = i / out;
        const double want = (r >= r0 && r < r0 + rows) ? oracle.get(i) : 0.0;
        const double got = outs[size_t(p)].get(i);
        if (std::fabs(got - want) > 1e-4 * std::fabs(want) + 1e-6)
          ++bad;
      }
      CHECK(bad == 0);
    }
  }
}
