// mpi_peers.cpp - Open MPI's side of the communication benchmarks (scripts/bench_comm.sh): what an
// MPI programmer writes for the same jobs, run under mpirun on this machine. Rank 0 prints one
// PEER line per case (peer_stats.h). Cases:
//   mpi_put_pingpong/8B        MPI_Put of 8 bytes + MPI_Win_flush, the peer polls its window
//                              (one passive-target MPI_Win_lock_all epoch); one way = RTT / 2
//   mpi_sendrecv_pingpong/8B   MPI_Send / MPI_Recv of 8 bytes; one way = RTT / 2
//   mpi_allreduce/8MiB         MPI_Allreduce fp32 sum of 8 MiB, per call
//   mpi_allreduce_loop/8KiB    MPI_Allreduce fp32 sum of 8 KiB, 200 in a row, per call
// The ping-pongs need exactly 2 ranks and run only then; each case name ends in "/np:N".
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 build-bench/bench/mpi_peers [--only SUBSTR]
#include "peer_stats.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mpi.h>
#include <string>
#include <vector>

namespace {

int rank = 0, size = 1;
constexpr int kReps = 11;

std::string with_np(const std::string &name) { return name + "/np:" + std::to_string(size); }

// One way latency of an 8-byte MPI_Put + MPI_Win_flush seen by a peer polling its own window
// memory. The window is from MPI_Win_allocate (osc/sm on one node: the put is a store into the
// peer's segment); the poll is a volatile load with MPI_Win_sync, plus an MPI_Iprobe every 64
// polls so that a component that needs target progress (osc/pt2pt) gets it.
void put_pingpong() {
  int64_t *base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                   &win);
  base[0] = base[1] = 0;
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Barrier(MPI_COMM_WORLD);
  const int peer = 1 - rank;
  const int iters = 20000;
  int64_t seq = 0;
  auto wait_for = [&](int64_t v) {
    volatile int64_t *slot = base;
    for (int spins = 0; *slot != v; ++spins) {
      MPI_Win_sync(win);
      if ((spins & 63) == 63) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      }
    }
  };
  std::vector<double> us;
  for (int rep = 0; rep < kReps + 1; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = peer::now_s();
    for (int i = 0; i < iters; ++i) {
      ++seq;
      if (rank == 0) {
        MPI_Put(&seq, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, win);
        MPI_Win_flush(peer, win);
        wait_for(seq);
      } else {
        wait_for(seq);
        MPI_Put(&seq, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, win);
        MPI_Win_flush(peer, win);
      }
    }
    if (rep > 0) // the first repetition warms up
      us.push_back((peer::now_s() - t0) / iters / 2 * 1e6);
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  if (rank == 0)
    peer::report(with_np("mpi_put_pingpong/8B"), us);
}

void sendrecv_pingpong() {
  const int peer = 1 - rank;
  const int iters = 20000;
  int64_t msg = 0;
  std::vector<double> us;
  for (int rep = 0; rep < kReps + 1; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = peer::now_s();
    for (int i = 0; i < iters; ++i) {
      if (rank == 0) {
        MPI_Send(&msg, 1, MPI_INT64_T, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(&msg, 1, MPI_INT64_T, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&msg, 1, MPI_INT64_T, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++msg;
        MPI_Send(&msg, 1, MPI_INT64_T, peer, 0, MPI_COMM_WORLD);
      }
    }
    if (rep > 0)
      us.push_back((peer::now_s() - t0) / iters / 2 * 1e6);
  }
  if (rank == 0)
    peer::report(with_np("mpi_sendrecv_pingpong/8B"), us);
}

// MPI_Allreduce (fp32 sum, out of place) of `bytes` per rank, `calls` in a row per repetition;
// the time per call. The result is checked once against the sum every rank can compute.
void allreduce(const std::string &name, int64_t bytes, int calls, int reps) {
  const int64_t n = bytes / 4;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[size_t(i)] = float((i * 7 + rank * 3) % 13); // small integers: the sum is exact
  MPI_Allreduce(x.data(), y.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r)
      want += double((i * 7 + r * 3) % 13);
    bad += y[size_t(i)] != float(want);
  }
  if (bad) {
    std::fprintf(stderr, "mpi_peers: %s: %lld wrong elements on rank %d\n", name.c_str(),
                 static_cast<long long>(bad), rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<double> us;
  for (int rep = 0; rep < reps; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = peer::now_s();
    for (int c = 0; c < calls; ++c)
      MPI_Allreduce(x.data(), y.data(), int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (peer::now_s() - t0) / calls * 1e6, slowest = 0;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    us.push_back(slowest);
  }
  if (rank == 0)
    peer::report(with_np(name), us);
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string only;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--only") == 0)
      only = argv[i + 1];
  auto want = [&](const char *name) { return only.empty() || std::strstr(name, only.c_str()); };
  if (size == 2 && want("mpi_put_pingpong"))
    put_pingpong();
  if (size == 2 && want("mpi_sendrecv_pingpong"))
    sendrecv_pingpong();
  if (want("mpi_allreduce/8MiB"))
    allreduce("mpi_allreduce/8MiB", int64_t{8} << 20, 3, kReps);
  if (want("mpi_allreduce_loop/8KiB"))
    allreduce("mpi_allreduce_loop/8KiB", int64_t{8} << 10, 200, kReps);
  MPI_Finalize();
  return 0;
}
