// sample.h - What every sample shares: the common flags, seeded inputs, the memory check, the
// error report and the closing `check: PASS|FAIL` line (exit 0 on pass, 1 on a failed check or
// a run-time error, 2 on bad flags or a run too large for this machine).
#pragma once

#include "pto/host_tensor.h"
#include "pto/jit.h"
#include "pto/runtime/world.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace sample {

struct CommonFlags {
  int pes = 8;
  uint64_t seed = 42;
  bool check = false;
  bool interpret = false;
  std::string dtype = "fp32";
  std::string trace;               ///< --trace FILE: Chrome trace JSON of the run
  std::string backend = "threads"; ///< --backend threads|mpi
};

/// The PE counts a sample accepts (--help prints them): [min, max], optionally even only.
struct PeLimits {
  int min = 1;
  int max = 4096;
  bool even = false;
};

/// The check of an integer flag: a decimal integer in [min, max]. Text that is not one says so
/// ("must be a decimal integer in [1, 4096], got 'abc'"); CLI::Range alone would call it "not
/// in range". Every sample's integer flags use it.
CLI::Validator int_range(int64_t min, int64_t max);

/// Adds --pes (checked against `limits`), --seed (a decimal integer in [0, 2^64)), --check,
/// --interpret, --trace (a path that can be written now: opened for writing at parse time, so a
/// bad one is a flag error before the run, not a failure after it), --backend and --dtype
/// (restricted to `dtypes`) to `app`.
void add_common_flags(CLI::App &app, CommonFlags &f, const std::vector<std::string> &dtypes,
                      PeLimits limits = {});

/// Parses argv; returns -1 to go on, else the exit code (0 for --help, 2 for bad flags).
/// With --backend mpi: exit 2 with a message when this build has no MPI or the process was not
/// started by mpirun; --pes defaults to the number of MPI ranks and must equal it.
int parse(CLI::App &app, int argc, char **argv);

/// The World of the run: `n_pes` PEs on the --backend the user chose (threads: all PEs in this
/// process; mpi: this process runs its rank's PE only, pto/runtime/mpi.h). Errors creating it
/// (a bad PTO_DEADLOCK_TIMEOUT_MS) point at `loc`, the sample's call.
std::unique_ptr<pto::runtime::World>
make_world(const CommonFlags &f, int n_pes, pto::runtime::WorldOptions opts = {},
           std::source_location loc = std::source_location::current());

/// After world.run on --backend mpi, gives every process every PE's copy of the tensors in
/// `per_pe` (each a vector indexed by PE, filled by that PE's process), so the check sees all PEs'
/// outputs on every rank. Nothing to do on threads. Collective under mpi.
void share_outputs(const CommonFlags &f,
                   std::initializer_list<std::vector<pto::HostTensor> *> per_pe);

/// --mesh DPxMP of the pto::parallel samples: a 2-D mesh of PEs (pto::parallel::Mesh), its two
/// axis sizes (0 until resolve_mesh).
struct MeshFlag {
  int64_t rows = 0, cols = 0;
  std::string text; ///< as the user wrote it; empty: derived from --pes
};

/// Adds --mesh to `app`: "AxB" (decimal integers >= 1, A*B in [limits.min, limits.max]),
/// described with the axis names `major` and `minor`.
void add_mesh_flag(CLI::App &app, MeshFlag &m, const std::string &major, const std::string &minor,
                   PeLimits limits);

/// After parse: the mesh and the PE count agree. Without --mesh the mesh is A x (pes / A) with A
/// the largest divisor of pes whose square is at most pes (8 -> 2x4, 16 -> 4x4, 7 -> 1x7). With
/// --mesh and without --pes (threads backend) pes becomes A*B; otherwise A*B must equal pes
/// (error message, exit 2). Returns -1 to go on, else the exit code.
int resolve_mesh(const CLI::App &app, CommonFlags &f, MeshFlag &m);

/// The kernels' JitOptions: the interpreter with --interpret, else the library's default (JIT,
/// or whatever PTO_RUN_MODE says), so PTO_RUN_MODE=interpret works for every sample.
pto::JitOptions jit_options(const CommonFlags &f);
/// The run mode the kernels use, for the report: "interpret" with --interpret, else the value
/// of PTO_RUN_MODE, else "jit". Without --interpret it checks PTO_RUN_MODE first (the kernels
/// would refuse a bad value at their first call): ArgumentError at `loc` (the sample's banner
/// line) naming the variable, so a banner never shows a mode that does not exist.
std::string mode_name(const CommonFlags &f,
                      std::source_location loc = std::source_location::current());

/// `value` if the user gave `flag`, else `base` scaled down for many PEs: base for up to 8 PEs,
/// then base * 8 / pes (at least 1). Keeps the default run of a sample whose traffic grows as
/// pes^2 (every PE sends to every PE) small at any PE count.
int64_t default_per_pe(const CLI::App &app, const std::string &flag, int64_t value, int64_t base,
                       int pes);

/// The memory a run needs, summed from its parts: host tensors per PE times PEs, symmetric
/// heaps, the kernels' local tensors, reference buffers. Sizes are overflow-checked and saturate
/// at INT64_MAX (which never fits).
class MemoryEstimate {
public:
  /// `count` buffers of `elems` elements of `elem_bytes` bytes each, named `what` in messages.
  MemoryEstimate &add(const std::string &what, int64_t count, int64_t elems, int64_t elem_bytes);
  /// `count` tensors of `shape` and `dt`.
  MemoryEstimate &add(const std::string &what, int64_t count, const std::vector<int64_t> &shape,
                      pto::DataType dt);
  int64_t total_bytes() const { return total_; }
  /// "inputs 1.0 GB, heaps 512 MB, ..." (the parts in the order added).
  std::string describe() const;

private:
  std::vector<std::pair<std::string, int64_t>> parts_;
  int64_t total_ = 0;
};

/// MemAvailable of /proc/meminfo in bytes, or -1 when it cannot be read.
int64_t available_memory_bytes();

/// True when the run fits: `need` plus 128 MiB for the process itself (runtime, compiler, code)
/// is at most 90% of MemAvailable (or MemAvailable is unknown).
/// Otherwise prints why to stderr ("error: this run needs about ... but only ... is available")
/// and returns false; the sample then exits with 2.
bool fits_in_memory(const MemoryEstimate &need);

/// Writes the world's timeline to f.trace when it was asked for (and says where: under --backend
/// mpi only rank 0, the process that writes the file, prints the line). Collective under mpi.
void write_trace(const pto::runtime::World &world, const CommonFlags &f);

/// A tensor of `dtype` filled from a seeded normal(0, 1) stream (ints: uniform in [-10, 10]).
pto::HostTensor random_tensor(pto::DataType dtype, const std::vector<int64_t> &shape,
                              uint64_t seed);

/// Errors of `got` against a double reference `want` (same element count).
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  int64_t bad = 0; ///< elements with |d| > atol + rtol*|want|, or NaN mismatches
};
ErrorStats compare(const pto::HostTensor &got, const std::vector<double> &want, double rtol,
                   double atol);

/// `v` as an element of `dt` holds it (floats rounded to nearest even, ints truncated).
double as_dtype(double v, pto::DataType dt);

/// Prints the closing line `check: PASS (<what>)` or `check: FAIL (<bad> elements ...)` and
/// returns the exit code (0 or 1).
int finish_check(int64_t bad, const std::string &what);

/// rtol/atol per dtype: fp32 1e-5, fp16/bf16 1e-2 (as tests/support/support.h), fp64 1e-12, ints
/// exact.
double tolerance(pto::DataType dt);

} // namespace sample
