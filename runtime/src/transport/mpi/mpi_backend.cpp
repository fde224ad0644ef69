// mpi_backend.cpp - The MPI Backend (pto/runtime/mpi.h): this process's PE is its rank, World::run
// runs it only, and the transport is the MPI one (mpi_transport.cpp).
#include "pto/error.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "mpi_session.h"

#include <algorithm>
#include <cstddef>
#include <fmt/format.h>

namespace pto::runtime {

namespace {
class MpiBackend final : public Backend {
public:
  const char *name() const override { return "mpi"; }
  std::vector<int> local_pes(int) const override { return {mpi::session().rank()}; }
  std::unique_ptr<transport::Transport> make_transport(int n_pes, transport::Host &host) override {
    mpi::Session &s = mpi::session();
    if (n_pes != s.size())
      throw DistributedError("<runtime>", "World",
                             fmt::format("the world has {} PEs but its MPI backend was made for "
                                         "{} (mpirun started {} ranks)",
                                         n_pes, s.size(), s.size()));
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
  if (int(bufs.size()) != s.size())
    throw DistributedError(
        loc, kOp,
        fmt::format("{} buffers for {} MPI ranks: one per PE expected", bufs.size(), s.size()));
  for (size_t p = 0; p < bufs.size(); ++p) {
    if (bufs[p].second < 0)
      throw ArgumentError(
          loc, kOp,
          fmt::format("buffer {} has {} bytes: a byte count is at least 0", p, bufs[p].second));
    if (!bufs[p].first && bufs[p].second > 0)
      throw ArgumentError(loc, kOp,
                          fmt::format("buffer {} is null with {} bytes", p, bufs[p].second));
  }
  // Every rank must pass the same counts (each broadcast moves them from its root as they are):
  // compared first, polled with the deadline as every collective of the runtime.
  const int64_t timeout_ms = 2 * WorldOptions::kDefaultDeadlockTimeoutMs;
  std::string counts;
  for (const auto &b : bufs)
    counts += fmt::format("{}{}", counts.empty() ? "" : ", ", b.second);
  const MPI_Comm comm = s.host_comm();
  try {
    const std::string d = s.differences(comm, "[" + counts + "]", timeout_ms, kOp);
    if (!d.empty())
      throw DistributedError(loc, kOp,
                             fmt::format("the ranks pass different byte counts ({}); every rank "
                                         "must pass the same counts",
                                         d));
    constexpr int64_t kChunk = int64_t{1} << 30; // MPI counts are int
    for (int p = 0; p < s.size(); ++p) {
      auto *base = static_cast<std::byte *>(bufs[size_t(p)].first);
      for (int64_t off = 0; off < bufs[size_t(p)].second; off += kChunk) {
        const int len = int(std::min(kChunk, bufs[size_t(p)].second - off));
        s.collective(comm, kOp, fmt::format("mpi_share_host_buffers (MPI_Ibcast from rank {})", p),
                     timeout_ms, [&](MPI_Request *r) {
                       return MPI_Ibcast(base + off, len, MPI_BYTE, p, comm, r);
                     });
      }
    }
  } catch (const DistributedError &e) {
    if (e.where() == "<runtime>")
      throw DistributedError(loc, kOp, e.detail());
    throw;
  } catch (const RuntimeError &e) {
    throw RuntimeError(loc, kOp, e.detail());
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
