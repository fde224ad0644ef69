// compare.cpp - bench/compare: every case of issue 11's target table, ptojit against its peer in
// the same process run, alternating ours / peer round by round, medians. Prints the physical
// limits it measured first (STREAM-style read / copy / triad on 1 and 2 threads, the FMA peaks
// on zmm and ymm, vdpbf16ps where the CPU has AVX512_BF16), then one row per case and
//   summary: N/M cases at target
// (rows whose target column is "-" are shown for reference and not counted). Not run by CI.
//
//   build-bench/bench/compare [--quick] [--rounds N] [--filter SUBSTRING] [--help]
//
// OpenBLAS's kernels are fixed when it loads (OPENBLAS_CORETYPE or its own detection): unless
// --openblas-core names one, compare first runs itself once per candidate core type in a child
// process (--openblas-probe), keeps the fastest whose results are right, and re-executes itself
// with it. oneDNN picks its ISA itself (ONEDNN_MAX_CPU_ISA caps it).
#include "pto/pto.h"

#include "bench_common.h"
#include "compare_cases.h"
#include "peers/limits.h"
#include "peers/openblas.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

const char *kHelp =
    R"(usage: compare [--quick] [--rounds N] [--filter SUBSTRING] [--openblas-core NAME] [--cpu-time]

Runs issue 11's benchmark cases: ptojit against its peer (oneDNN, OpenBLAS, a hand-written
-O3 -march=native -ffast-math loop, or a physical limit) in this one process, alternating ours and
the peer each round; prints medians, one row per case:
  case, ours, peer, ratio (peer time / ours: above 1 ptojit is faster), the fraction of the
  physical limit ptojit reaches, the target, and whether it is met
and a last line "summary: N/M cases at target". Rows with target "-" are for reference only.

  --quick              5 rounds, the elementwise chain on 128 MiB instead of 512 MiB (< 3 min)
  --rounds N           rounds per case (default 11; --quick 5)
  --filter SUBSTRING   only the cases whose name contains SUBSTRING (the limits always run)
  --openblas-core NAME use OPENBLAS_CORETYPE=NAME instead of probing the candidates
  --cpu-time           time with the process's CPU clock instead of the wall clock: for tuning
                       single-threaded code on a busy machine (2-thread peers then count the
                       CPU time of both threads, so their rows mean little)
  --openblas-probe     (internal) time OpenBLAS sgemm under the current core type and exit
  --help               this text

Environment: ONEDNN_MAX_CPU_ISA caps oneDNN (e.g. AVX512_CORE_BF16 to compare bf16 matmul
without AMX); PTO_ISA caps ptojit's JIT (native, avx512, avx2, ...). The machine should be quiet:
the table is only as good as the run (compare prints the load average it started with).
)";

/// --openblas-probe: sgemm at 1024^3 (median of 5) after a check at odd sizes; prints
/// "probe <core> <ms> <ok>".
int openblas_probe() {
  bool ok = true;
  for (auto [m, k, n] : {std::array<int64_t, 3>{67, 33, 45}, {1024, 1024, 1024}}) {
    auto a = bench::random_tensor(pto::DT_FP32, {m, k}, 1);
    auto b = bench::random_tensor(pto::DT_FP32, {k, n}, 2);
    pto::HostTensor c(pto::DT_FP32, {m, n});
    peer::openblas::sgemm(m, k, n, a.data_as<float>(), b.data_as<float>(), c.data_as<float>(), 1);
    for (int64_t i = 0; i < m && ok; i += std::max<int64_t>(1, m / 17))
      for (int64_t j = 0; j < n && ok; j += std::max<int64_t>(1, n / 13)) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<double>(a.data_as<float>()[i * k + p]) * b.data_as<float>()[p * n + j];
        ok = std::abs(s - c.data_as<float>()[i * n + j]) <= 1e-4 * static_cast<double>(k);
      }
    if (m == 1024) {
      std::vector<double> t;
      for (int r = 0; r < 5; ++r) {
        double t0 = cmp::now_s();
        peer::openblas::sgemm(m, k, n, a.data_as<float>(), b.data_as<float>(), c.data_as<float>(),
                              1);
        t.push_back(cmp::now_s() - t0);
      }
      std::printf("probe %s %.3f %d\n", peer::openblas::core().c_str(), cmp::median(t) * 1e3,
                  ok ? 1 : 0);
    }
  }
  return 0;
}

/// Runs the probe under each candidate core type; returns the fastest correct one ("" if none)
/// and describes the candidates in `report`.
std::string choose_openblas_core(std::string &report) {
  std::vector<std::string> cands = {"", "SapphireRapids", "Cooperlake", "SkylakeX", "Haswell"};
  if (const char *pre = std::getenv("OPENBLAS_CORETYPE"); pre && *pre)
    cands.insert(cands.begin(), pre);
  std::string best;
  double best_ms = 1e300;
  for (const auto &c : cands) {
    std::string cmd = (c.empty() ? std::string("env -u OPENBLAS_CORETYPE ")
                                 : "env OPENBLAS_CORETYPE=" + c + " ") +
                      "/proc/" + std::to_string(getpid()) + "/exe --openblas-probe 2>/dev/null";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p)
      continue;
    char core[64] = {0};
    double ms = 0;
    int ok = 0;
    int got = std::fscanf(p, "probe %63s %lf %d", core, &ms, &ok);
    pclose(p);
    if (got != 3)
      continue;
    report += (report.empty() ? "" : ", ") + (c.empty() ? std::string("auto") : c) + " -> " + core +
              " " + cmp::fmt_ms(ms) + (ok ? "" : " WRONG");
    if (ok && ms < best_ms) {
      best_ms = ms;
      best = c.empty() ? core : c;
    }
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  cmp::Options o;
  std::string forced_core;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "compare: %s needs a value (see --help)\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--rounds") {
      o.rounds = std::atoi(value().c_str());
      if (o.rounds < 1) {
        std::fprintf(stderr, "compare: --rounds needs a positive count\n");
        return 2;
      }
    } else if (a == "--cpu-time") {
      o.cpu_time = true;
    } else if (a == "--filter") {
      o.filter = value();
    } else if (a == "--openblas-core") {
      forced_core = value();
    } else if (a == "--openblas-probe") {
      return openblas_probe();
    } else {
      std::fprintf(stderr, "compare: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (o.rounds == 0)
    o.rounds = o.quick ? 5 : 11;

  // The OpenBLAS core type: chosen in the parent, then this program again with it set.
  if (!std::getenv("PTO_COMPARE_CHILD")) {
    std::string report, core = forced_core;
    if (core.empty())
      core = choose_openblas_core(report);
    if (!core.empty())
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    setenv("PTO_COMPARE_OPENBLAS_PROBE", report.empty() ? "not probed" : report.c_str(), 1);
    setenv("PTO_COMPARE_CHILD", "1", 1);
    execv(("/proc/" + std::to_string(getpid()) + "/exe").c_str(), argv);
    std::perror("compare: re-executing itself failed; going on with OpenBLAS's own choice");
  }
  return cmp::run_all(o);
}
