// ptojit_mpi.cpp - ptojit's allreduce on the MPI transport (one PE per process, --backend mpi)
// against MPI_Allreduce, both measured in the same processes of the same run, repetitions
// interleaved (the machine is shared): fp32 sum of 8 MiB per call, and of 8 KiB 200 times in a
// row per call (one kernel with 200 allreduces; 200 MPI_Allreduce calls). Each repetition's time
// is the slowest rank's. Rank 0 prints PEER lines (peer_stats.h) that scripts/bench_comm.sh
// puts in its table:
//   ptojit_mpi_allreduce/8MiB/np:N, mpi_allreduce_same_run/8MiB/np:N,
//   ptojit_mpi_allreduce_loop/8KiB/np:N, mpi_allreduce_loop_same_run/8KiB/np:N
// The ptojit results are checked against the exact sum (small integers) before timing.
//
//   mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2
//     build-bench/bench/ptojit_mpi [--reps 11] [--only SUBSTR]
// PTO_MPI_SHARED=0 runs ptojit on the MPI RMA path (MPI_Put / MPI_Accumulate) instead of the
// shared-memory windows.
#include "pto/pto.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "peer_stats.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mpi.h>
#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

int rank = 0, size = 1;
constexpr int kLoop = 200; // allreduces per call of the 8 KiB case

void allreduce_once(pto::Tensor x, pto::Tensor y) {
  pto::set_vec_tile_shapes(8, x.shape(1).concrete());
  pto::assemble(dist::allreduce(x, dist::Reduction::SUM), {0, 0}, y);
}

void allreduce_loop(pto::Tensor x, pto::Tensor y) {
  pto::set_vec_tile_shapes(2, 1024);
  for (auto i : pto::loop(0, kLoop)) {
    pto::assemble(dist::allreduce(x, dist::Reduction::SUM), {0, 0}, y);
    (void)i;
  }
}

float input(int64_t i, int r) { return float((i * 7 + r * 3) % 13); } // exact sums

double slowest(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

template <class Kernel>
void run_case(const std::string &base, const std::string &bytes, Kernel &kernel, int64_t rows,
              int64_t cols, int calls, int reps) {
  pto::runtime::World world(size, {}, pto::runtime::make_mpi_backend(size));
  pto::HostTensor x(pto::DT_FP32, {rows, cols}), y(pto::DT_FP32, {rows, cols});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, input(i, rank));
  auto ours = [&] { world.run([&](int) { kernel(x, y); }); };
  ours(); // untimed: traces and compiles
  const std::string name = base + "/" + bytes;
  int64_t bad = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r)
      want += input(i, r);
    bad += y.get(i) != want;
  }
  if (bad) {
    std::fprintf(stderr, "ptojit_mpi: %s: %lld wrong elements on rank %d\n", name.c_str(),
                 static_cast<long long>(bad), rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int n = int(x.numel());
  std::vector<float> mx(static_cast<size_t>(n)), my(static_cast<size_t>(n));
  std::memcpy(mx.data(), x.data_as<float>(), size_t(n) * 4);
  std::vector<double> t_ours, t_mpi;
  for (int rep = 0; rep < reps + 1; ++rep) { // the first repetition warms up
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = peer::now_s();
    ours();
    const double a = slowest((peer::now_s() - t0) / calls * 1e6);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = peer::now_s();
    for (int c = 0; c < calls; ++c)
      MPI_Allreduce(mx.data(), my.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double b = slowest((peer::now_s() - t0) / calls * 1e6);
    if (rep > 0) {
      t_ours.push_back(a);
      t_mpi.push_back(b);
    }
  }
  if (rank == 0) {
    const std::string tail = "/" + bytes + "/np:" + std::to_string(size);
    peer::report("ptojit_mpi_" + base + tail, t_ours);
    peer::report("mpi_" + base + "_same_run" + tail, t_mpi);
  }
}

} // namespace

int main(int argc, char **argv) {
  int reps = 11;
  std::string only;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--only") == 0)
      only = argv[i + 1];
  }
  rank = pto::runtime::mpi_rank(); // initializes MPI (the MPI backend's session)
  size = pto::runtime::mpi_size();
  auto want = [&](const char *name) { return only.empty() || std::strstr(name, only.c_str()); };
  if (want("allreduce/8MiB")) {
    auto k = pto::jit("allreduce_8MiB", allreduce_once);
    run_case("allreduce", "8MiB", k, 2048, 1024, 1, reps);
  }
  if (want("allreduce_loop/8KiB")) {
    auto k = pto::jit("allreduce_loop_8KiB", allreduce_loop);
    run_case("allreduce_loop", "8KiB", k, 2, 1024, kLoop, reps);
  }
  return 0;
}
