// sample.cpp - See sample.h.
#include "sample.h"

#include "pto/env.h"
#include "pto/runtime/mpi.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <unistd.h>

namespace sample {

namespace {
// a * b, or INT64_MAX when it overflows or either is negative (sizes never are).
int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    return INT64_MAX;
  return r;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

std::string bytes_str(int64_t b) {
  if (b == INT64_MAX)
    return "more than 9.2 EB";
  const char *units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = double(b);
  int u = 0;
  while (v >= 1000 && u < 6) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

/// The flags add_common_flags registered, for parse()'s --backend checks.
CommonFlags *g_flags = nullptr;
PeLimits g_limits; ///< add_common_flags' limits: the rank count under --backend mpi obeys them

/// --backend mpi's checks after parsing: MPI built in, started by mpirun, --pes = ranks.
/// Returns -1 to go on, else the exit code.
int check_backend(const CLI::App &app, CommonFlags &f) {
  if (f.backend != "mpi")
    return -1;
#if PTO_HAVE_MPI
  if (!pto::runtime::launched_by_mpirun()) {
    fmt::print(stderr,
               "error: --backend mpi runs one PE per process under mpirun, e.g. `mpirun "
               "-np 4 {} --backend mpi` (as root add --allow-run-as-root; on few cores "
               "--oversubscribe)\n",
               app.get_name());
    return 2;
  }
  int ranks = 0;
  try { // MPI starts here: settings the ranks disagree on fail it (on every rank)
    ranks = pto::runtime::mpi_size();
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  if (app.count("--pes") == 0) {
    // The rank count stands for --pes: the same limits.
    if (ranks < g_limits.min || ranks > g_limits.max || (g_limits.even && ranks % 2 != 0)) {
      fmt::print(stderr,
                 "error: mpirun started {} ranks; under --backend mpi every PE is one rank and "
                 "{} runs {} to {} PEs{} (mpirun -np N)\n",
                 ranks, app.get_name(), g_limits.min, g_limits.max,
                 g_limits.even ? ", an even number" : "");
      return 2;
    }
    f.pes = ranks;
  } else if (f.pes != ranks) {
    fmt::print(stderr,
               "error: --pes {} but mpirun started {} ranks; under --backend mpi every "
               "PE is one rank (leave --pes out, or mpirun -np {})\n",
               f.pes, ranks, f.pes);
    return 2;
  }
  return -1;
#else
  (void)app;
  fmt::print(stderr, "error: --backend mpi: this build of ptojit has no MPI support; install "
                     "Open MPI (scripts/bootstrap.sh: openmpi-bin, libopenmpi-dev) and rebuild\n");
  return 2;
#endif
}

/// --seed's rule: decimal digits only, within uint64_t. (CLI11 alone takes -1 as 2^64 - 1,
/// saturates 2^64 and above, and reads 0x10 as hex: three ways to run another seed silently.)
std::string seed_error(const std::string &s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return fmt::format("must be a decimal integer in [0, {}], got '{}'", UINT64_MAX, s);
  return "";
}

std::string int_range_error(const std::string &s, int64_t min, int64_t max) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < min || v > max)
    return fmt::format("must be a decimal integer in [{}, {}], got '{}'", min, max, s);
  return "";
}

/// Why the trace cannot be written to `path` ("" when it can), found by opening it for writing
/// now, so that a run does not end in a failed open (a write that fails later, a full disk, is
/// World::write_trace's error after the run: exit 1). A file this creates is removed again; an
/// existing one is left as it is (no truncation); O_NONBLOCK: a FIFO must not block the check.
std::string trace_path_error(const std::string &path) {
  if (path.empty())
    return "the trace file path is empty";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return "";
  }
  if (errno == EEXIST) {
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      ::close(fd);
      return "";
    }
  }
  return fmt::format("cannot write the trace file '{}': {}", path, std::strerror(errno));
}
} // namespace

CLI::Validator int_range(int64_t min, int64_t max) {
  return CLI::Validator([min, max](std::string &s) { return int_range_error(s, min, max); },
                        fmt::format("INT in [{} - {}]", min, max));
}

void add_common_flags(CLI::App &app, CommonFlags &f, const std::vector<std::string> &dtypes,
                      PeLimits limits) {
  f.pes = std::clamp(f.pes, limits.min, limits.max);
  auto *pes = app.add_option("--pes", f.pes,
                             "number of processing elements (PEs): threads, or with --backend "
                             "mpi the number of MPI ranks (the default then). Many PEs on "
                             "threads are for correctness, not speed: memory and time grow with "
                             "the PE count (thousands of PEs: minutes and GBs)")
                  ->check(int_range(limits.min, limits.max))
                  ->capture_default_str();
  if (limits.even)
    pes->check(CLI::Validator(
        [](std::string &s) {
          return std::strtoll(s.c_str(), nullptr, 10) % 2 == 0 ? std::string()
                                                               : "must be even, got " + s;
        },
        "EVEN"));
  app.add_option("--seed", f.seed, "seed of the input generator, a decimal integer in [0, 2^64)")
      ->check(CLI::Validator(seed_error, "UINT64"))
      ->capture_default_str();
  app.add_option("--dtype", f.dtype, "element type of the inputs and outputs")
      ->check(CLI::IsMember(dtypes))
      ->capture_default_str();
  app.add_flag("--check", f.check,
               "compare every PE's output with a plain C++ reference in double; ends with "
               "`check: PASS` or `check: FAIL` (exit 1)");
  app.add_flag("--interpret", f.interpret,
               "run the kernels in the reference interpreter instead of JIT-compiled code "
               "(PTO_RUN_MODE=interpret does the same)");
  app.add_option("--trace", f.trace,
                 "write a Chrome trace JSON of the run to FILE (one lane per PE; open in "
                 "Perfetto); a FILE that cannot be opened for writing is refused (exit 2) "
                 "before the run; a write error after the run (a full disk) is exit 1")
      ->type_name("FILE")
      ->check(CLI::Validator(trace_path_error, "WRITABLE"));
  app.add_option("--backend", f.backend,
                 "PE backend: threads (one process, one thread per PE) or mpi (one PE per "
                 "process: mpirun -np N prog --backend mpi)")
      ->check(CLI::IsMember({"threads", "mpi"}))
      ->capture_default_str();
  g_flags = &f;
  g_limits = limits;
}

int parse(CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2; // --help exits 0; bad flags exit 2
  }
  return g_flags ? check_backend(app, *g_flags) : -1;
}

std::unique_ptr<pto::runtime::World> make_world(const CommonFlags &f, int n_pes,
                                                pto::runtime::WorldOptions opts,
                                                std::source_location loc) {
#if PTO_HAVE_MPI
  if (f.backend == "mpi")
    return std::make_unique<pto::runtime::World>(n_pes, opts, pto::runtime::make_mpi_backend(n_pes),
                                                 loc);
#else
  (void)f;
#endif
  return std::make_unique<pto::runtime::World>(n_pes, opts, loc);
}

void share_outputs(const CommonFlags &f,
                   std::initializer_list<std::vector<pto::HostTensor> *> per_pe) {
#if PTO_HAVE_MPI
  if (f.backend != "mpi")
    return;
  for (auto *tensors : per_pe) {
    std::vector<std::pair<void *, int64_t>> bufs;
    for (auto &t : *tensors)
      bufs.emplace_back(t.data(), t.numel() * pto::bytes_of(t.dtype()));
    pto::runtime::mpi_share_host_buffers(bufs);
  }
#else
  (void)f;
  (void)per_pe;
#endif
}

namespace {
/// "AxB" as two decimal integers >= 1, or false.
bool parse_mesh(const std::string &s, int64_t &a, int64_t &b) {
  const auto x = s.find('x');
  if (x == std::string::npos)
    return false;
  auto num = [](const char *p, const char *e, int64_t &v) {
    auto [end, ec] = std::from_chars(p, e, v);
    return p != e && ec == std::errc() && end == e && v >= 1;
  };
  return num(s.data(), s.data() + x, a) && num(s.data() + x + 1, s.data() + s.size(), b);
}
std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
} // namespace

void add_mesh_flag(CLI::App &app, MeshFlag &m, const std::string &major, const std::string &minor,
                   PeLimits limits) {
  app.add_option(
         "--mesh", m.text,
         fmt::format("the 2-D PE mesh, {0} x {1} (e.g. 2x4): PE p sits at ({0}, {1}) = (p / "
                     "{1}, p % {1}); sets --pes when that is not given, else must equal "
                     "it. Default: from --pes, {0} = the largest divisor of pes whose "
                     "square is at most pes (8 PEs: 2x4, 16: 4x4, 7: 1x7)",
                     major, minor))
      ->type_name(fmt::format("{}x{}", upper(major), upper(minor)))
      ->check(CLI::Validator(
          [limits](std::string &s) -> std::string {
            int64_t a = 0, b = 0;
            if (!parse_mesh(s, a, b))
              return fmt::format("must be AxB with decimal integers A, B >= 1 (e.g. 2x4), got "
                                 "'{}'",
                                 s);
            if (a > limits.max || b > limits.max || a * b < limits.min || a * b > limits.max)
              return fmt::format("{} has {} x {} PEs; the PE count must be in [{}, {}]", s, a, b,
                                 limits.min, limits.max);
            return "";
          },
          "MESH"));
}

int resolve_mesh(const CLI::App &app, CommonFlags &f, MeshFlag &m) {
  if (m.text.empty()) {
    int64_t a = 1;
    for (int64_t d = 1; d * d <= f.pes; ++d)
      if (f.pes % d == 0)
        a = d;
    m.rows = a;
    m.cols = f.pes / a;
    return -1;
  }
  parse_mesh(m.text, m.rows, m.cols); // checked at parse time
  const int64_t n = m.rows * m.cols;
  if (app.count("--pes") == 0 && f.backend != "mpi") {
    f.pes = static_cast<int>(n);
    return -1;
  }
  if (n != f.pes) {
    if (f.backend == "mpi")
      fmt::print(stderr,
                 "error: --mesh {} has {} PEs but mpirun started {} ranks (one PE each); give a "
                 "mesh of {} PEs or mpirun -np {}\n",
                 m.text, n, f.pes, f.pes, n);
    else
      fmt::print(stderr,
                 "error: --mesh {} has {} PEs but --pes is {}; give a mesh of {} PEs or leave "
                 "--pes out\n",
                 m.text, n, f.pes, f.pes);
    return 2;
  }
  return -1;
}

pto::JitOptions jit_options(const CommonFlags &f) {
  pto::JitOptions o;
  if (f.interpret)
    o.run_mode = pto::RunMode::Interpret;
  return o;
}

std::string mode_name(const CommonFlags &f, std::source_location loc) {
  if (f.interpret) // the kernels do not read PTO_RUN_MODE then
    return "interpret";
  return pto::env::read_choice(pto::env::var("PTO_RUN_MODE"), loc).value_or("jit");
}

int64_t default_per_pe(const CLI::App &app, const std::string &flag, int64_t value, int64_t base,
                       int pes) {
  if (app.count(flag) > 0)
    return value;
  return pes <= 8 ? base : std::max<int64_t>(1, base * 8 / pes);
}

MemoryEstimate &MemoryEstimate::add(const std::string &what, int64_t count, int64_t elems,
                                    int64_t elem_bytes) {
  const int64_t bytes = saturating_mul(count, saturating_mul(elems, elem_bytes));
  parts_.emplace_back(what, bytes);
  total_ = saturating_add(total_, bytes);
  return *this;
}

MemoryEstimate &MemoryEstimate::add(const std::string &what, int64_t count,
                                    const std::vector<int64_t> &shape, pto::DataType dt) {
  int64_t elems = 1;
  for (int64_t d : shape)
    elems = saturating_mul(elems, d);
  return add(what, count, elems, pto::bytes_of(dt));
}

std::string MemoryEstimate::describe() const {
  std::string s;
  for (const auto &[what, bytes] : parts_)
    s += (s.empty() ? "" : ", ") + what + " " + bytes_str(bytes);
  return s;
}

int64_t available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:")
      return saturating_mul(kb, 1024);
  return -1;
}

bool fits_in_memory(const MemoryEstimate &need) {
  // The process itself: the runtime, the compiler, the compiled code.
  constexpr int64_t kBaseBytes = int64_t{128} << 20;
  const int64_t total = saturating_add(need.total_bytes(), kBaseBytes);
  const int64_t avail = available_memory_bytes();
  if (avail < 0 || total <= avail / 10 * 9)
    return true;
  fmt::print(stderr,
             "error: this run needs about {} ({}, runtime and compiler {}) but only {} of memory "
             "is available (MemAvailable in /proc/meminfo); choose smaller sizes or fewer "
             "--pes\n",
             bytes_str(total), need.describe(), bytes_str(kBaseBytes), bytes_str(avail));
  return false;
}

void write_trace(const pto::runtime::World &world, const CommonFlags &f) {
  if (f.trace.empty())
    return;
  world.write_trace(f.trace);
  // Under --backend mpi only the process of PE 0 writes the file: only it says so.
#if PTO_HAVE_MPI
  if (f.backend == "mpi" && pto::runtime::mpi_rank() != 0)
    return;
#endif
  fmt::print("  trace  {} ({} events; open in Perfetto)\n", f.trace, world.trace_events());
}

pto::HostTensor random_tensor(pto::DataType dtype, const std::vector<int64_t> &shape,
                              uint64_t seed) {
  pto::HostTensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> ints(-10, 10);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, pto::is_float(dtype) ? normal(rng) : ints(rng));
  return t;
}

ErrorStats compare(const pto::HostTensor &got, const std::vector<double> &want, double rtol,
                   double atol) {
  ErrorStats s;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(g) || std::isnan(w)) {
      if (std::isnan(g) != std::isnan(w))
        ++s.bad;
      continue;
    }
    double d = std::fabs(g - w);
    s.max_abs = std::max(s.max_abs, d);
    if (w != 0)
      s.max_rel = std::max(s.max_rel, d / std::fabs(w));
    if (d > atol + rtol * std::fabs(w))
      ++s.bad;
  }
  return s;
}

double as_dtype(double v, pto::DataType dt) {
  pto::HostTensor t(dt, {1});
  t.set(0, v);
  return t.get(0);
}

int finish_check(int64_t bad, const std::string &what) {
  if (bad == 0) {
    fmt::print("check: PASS ({})\n", what);
    return 0;
  }
  fmt::print("check: FAIL ({} elements outside tolerance)\n", bad);
  return 1;
}

double tolerance(pto::DataType dt) {
  switch (dt) {
  case pto::DT_FP32:
    return 1e-5;
  case pto::DT_FP16:
  case pto::DT_BF16:
    return 1e-2;
  case pto::DT_DOUBLE:
    return 1e-12;
  default:
    return 0;
  }
}

} // namespace sample
