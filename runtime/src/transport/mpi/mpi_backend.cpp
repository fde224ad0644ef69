// mpi_backend.cpp - The MPI Backend (pto/runtime/mpi.h): this process's PE is its rank, World::run
// runs it only, and the transport is the MPI one (mpi_transport.cpp).
#include "pto/error.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "mpi_session.h"

#include <algorithm>
#include <cstddef>
#include <fmt/format.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pto::runtime {

namespace {
class MpiBackend final : public Backend {
public:
  const char *name() const override { return "mpi"; }
  std::vector<int> local_pes(int) const override { return {mpi::session().rank()}; }
  std::unique_ptr<transport::Transport> make_transport(int n_pes, transport::Host &host) override {
    mpi::Session &s = mpi::session();
    if (n_pes != s.size())
      throw DistributedError(
          "<runtime>", "World",
          fmt::format("the world has {} PEs but mpirun started {} ranks", n_pes, s.size()));
    return mpi::make_transport(s, host);
  }
  void run(int n_pes, const std::function<void(int pe)> &body,
           const std::function<void()> &) override {
    mpi::Session &s = mpi::session();
    if (n_pes != s.size())
      throw DistributedError(
          "<runtime>", "World::run",
          fmt::format("the world has {} PEs but mpirun started {} ranks", n_pes, s.size()));
    body(s.rank());
  }
};

mpi::Session &session_at(const std::source_location &loc, const char *op) {
  try {
    return mpi::session();
  } catch (const ArgumentError &e) { // a bad PTO_MPI_* value: as on the threads transport
    throw ArgumentError(loc, e.op(), e.detail());
  } catch (const Error &e) {
    throw DistributedError(loc, op, e.detail());
  }
}
} // namespace

int mpi_rank(std::source_location loc) { return session_at(loc, "mpi_rank").rank(); }
int mpi_size(std::source_location loc) { return session_at(loc, "mpi_size").size(); }

void mpi_share_host_buffers(const std::vector<std::pair<void *, int64_t>> &bufs,
                            std::source_location loc) {
  constexpr const char *kOp = "mpi_share_host_buffers";
  mpi::Session &s = session_at(loc, kOp);
  const int n = s.size();
  // Every rank checks every rank's arguments (one allgather of the counts and null flags), so
  // that bad arguments on one rank fail every rank alike. Every collective here is polled with
  // a deadline (Session::collective) on the session's host communicator: a rank that does not
  // call it fails the others instead of leaving them blocked in MPI.
  const int64_t timeout_ms = 2 * WorldOptions::kDefaultDeadlockTimeoutMs;
  const MPI_Comm comm = s.host_comm();
  auto polled = [&](const std::string &what, const std::function<int(MPI_Request *)> &start,
                    std::vector<std::shared_ptr<void>> keep = {}) {
    try {
      s.collective(comm, kOp, what, timeout_ms, start, false, std::move(keep));
    } catch (const Error &e) { // at the caller's line
      if (dynamic_cast<const DistributedError *>(&e))
        throw DistributedError(loc, kOp, e.detail());
      throw RuntimeError(loc, kOp, e.detail());
    }
  };
  const int w = 2 * n + 1;
  // Shared: an abandoned request may complete into them later (Session::retain). The Ibcasts
  // below write into the caller's buffers, only the bytes meant for them.
  const auto minep = std::make_shared<std::vector<int64_t>>(size_t(w), 0);
  const auto allp = std::make_shared<std::vector<int64_t>>(size_t(w) * size_t(n), 0);
  std::vector<int64_t> &mine = *minep;
  const std::vector<int64_t> &all = *allp;
  mine[0] = int64_t(bufs.size());
  for (size_t p = 0; p < size_t(n) && p < bufs.size(); ++p) {
    mine[1 + 2 * p] = bufs[p].second;
    mine[2 + 2 * p] = bufs[p].first == nullptr ? 1 : 0;
  }
  polled("mpi_share_host_buffers (MPI_Iallgather of the counts)",
         [&](MPI_Request *r) {
           return MPI_Iallgather(minep->data(), w, MPI_INT64_T, allp->data(), w, MPI_INT64_T, comm,
                                 r);
         },
         {minep, allp});
  auto at = [&](int rank, int k) { return all[size_t(rank) * size_t(w) + size_t(k)]; };
  for (int r = 0; r < n; ++r)
    if (at(r, 0) != n)
      throw DistributedError(loc, kOp,
                             fmt::format("rank {} passes {} buffers for {} MPI ranks: one per PE "
                                         "expected",
                                         r, at(r, 0), n));
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      const int64_t bytes = at(r, 1 + 2 * p);
      if (bytes < 0)
        throw ArgumentError(loc, kOp,
                            fmt::format("rank {} passes {} bytes for buffer {}: a byte count "
                                        "must be >= 0",
                                        r, bytes, p));
      if (bytes > 0 && at(r, 2 + 2 * p))
        throw ArgumentError(loc, kOp,
                            fmt::format("rank {} passes a null address for buffer {} of {} "
                                        "bytes",
                                        r, p, bytes));
      if (bytes != at(0, 1 + 2 * p))
        throw DistributedError(loc, kOp,
                               fmt::format("buffer {} has {} bytes on rank 0 but {} on rank {}: "
                                           "every rank must pass the same byte counts",
                                           p, at(0, 1 + 2 * p), bytes, r));
    }
  constexpr int64_t kChunk = int64_t{1} << 30; // MPI counts are int
  for (int p = 0; p < n; ++p) {
    auto *base = static_cast<std::byte *>(bufs[size_t(p)].first);
    for (int64_t off = 0; off < bufs[size_t(p)].second; off += kChunk) {
      const int len = int(std::min(kChunk, bufs[size_t(p)].second - off));
      polled(fmt::format("mpi_share_host_buffers (MPI_Ibcast from rank {})", p),
             [&](MPI_Request *r) { return MPI_Ibcast(base + off, len, MPI_BYTE, p, comm, r); });
    }
  }
}

std::unique_ptr<Backend> make_mpi_backend(int n_pes, std::source_location loc) {
  mpi::Session &s = session_at(loc, "make_mpi_backend");
  if (n_pes != s.size())
    throw DistributedError(loc, "make_mpi_backend",
                           fmt::format("a World of {} PEs on the MPI backend needs as many MPI "
                                       "ranks, but mpirun started {} (mpirun -np {} ...)",
                                       n_pes, s.size(), n_pes));
  return std::make_unique<MpiBackend>();
}

} // namespace pto::runtime
