// compare_cases.cpp - See compare_cases.h. Each case makes its tensors, checks ours against the
// peer once (a wrong result is a row marked WRONG, never a time), then alternates them: per
// round ours once and each peer once, each a batch of calls lasting at least kMinBatch (sized
// at the warm-up call), and keeps the medians of the per-call times.
#include "compare_cases.h"

#include "pto/pto.h"
#include "pto/runtime/pool.h"
#include "pto/runtime/world.h"

#include "bench_common.h"
#include "peers/limits.h"
#include "peers/loops.h"
#include "peers/onednn.h"
#include "peers/openblas.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <time.h>

namespace cmp {

namespace {
bool g_cpu_time = false; ///< --cpu-time: timed sections use the process's CPU time
} // namespace

double now_s() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fmt_ms(double ms) {
  char b[32];
  if (ms >= 1)
    std::snprintf(b, sizeof b, "%.3g ms", ms);
  else if (ms >= 1e-3)
    std::snprintf(b, sizeof b, "%.3g us", ms * 1e3);
  else
    std::snprintf(b, sizeof b, "%.3g ns", ms * 1e6);
  return b;
}

namespace {

using Fn = std::function<void()>;
constexpr double kMinBatch = 0.02; ///< seconds per timed batch

/// Seconds per call of each of `fns`, alternating them round by round; medians.
std::vector<double> alternate(const std::vector<Fn> &fns, int rounds) {
  std::vector<int64_t> batch;
  for (const Fn &f : fns) {
    double t0 = now_s();
    f();
    double dt = std::max(now_s() - t0, 1e-9);
    batch.push_back(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kMinBatch / dt))));
  }
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      double t0 = now_s();
      for (int64_t b = 0; b < batch[i]; ++b)
        fns[i]();
      t[i].push_back((now_s() - t0) / static_cast<double>(batch[i]));
    }
  std::vector<double> med;
  for (auto &v : t)
    med.push_back(median(v));
  return med;
}

struct Limits {
  double read[2], copy[2], triad[2]; ///< bytes/s on 1 and 2 threads
  double fma_zmm, fma_ymm, dpbf16;   ///< FLOP/s of one core
  double fma() const { return fma_zmm > 0 ? fma_zmm : fma_ymm; }
  /// The limit on `th` threads; on 2, the better of 1 and 2 (a busy machine can make the 2-thread
  /// measurement the lower, and a fraction of it would flatter ptojit).
  static double best(const double (&l)[2], int th) { return th == 1 ? l[0] : std::max(l[0], l[1]); }
};

struct Row {
  std::string name, peer_name;
  double ours = 0, peer = 0; ///< seconds per call; peer 0: none
  std::string limit;         ///< "0.83 of read 1T" or ""
  std::string target;        ///< "-": a reference row
  int met = -1;              ///< -1 reference, 0 missed, 1 met
  bool wrong = false;
};

class Runner {
public:
  explicit Runner(const Options &o) : o_(o) {}

  int run() {
    header();
    limits();
    softmax(pto::DT_FP32, 4096, 4096, 1.2, 0.75);
    softmax(pto::DT_BF16, 4096, 4096, 1.2, 0.75);
    softmax(pto::DT_FP32, 256, 1024, 1.0, 0);
    layer_norm();
    row_reduce(true);
    row_reduce(false);
    chain(pto::DT_FP32);
    chain(pto::DT_BF16);
    matmul(pto::DT_FP32);
    matmul(pto::DT_BF16);
    pool_speedup();
    tiny();
    cold();
    table();
    return 0;
  }

private:
  const Options &o_;
  /// The threads one PE of ptojit runs on (its pool, pto/runtime/pool.h), as the peers count them.
  const int th_ = std::min(2, pto::runtime::pool_threads());
  Limits lim_{};
  std::vector<Row> rows_;

  bool wanted(const std::string &name) const {
    return o_.filter.empty() || name.find(o_.filter) != std::string::npos;
  }

  static std::string first_line(const char *path, const char *key) {
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);)
      if (l.rfind(key, 0) == 0)
        return l.substr(l.find(':') + 1);
    return "?";
  }

  void header() {
    std::printf("cpu:%s\n", first_line("/proc/cpuinfo", "model name").c_str());
    std::ifstream la("/proc/loadavg");
    std::string load;
    std::getline(la, load);
    std::printf("load average at start: %s\n", load.c_str());
    std::printf("rounds per case: %d%s%s\n", o_.rounds, o_.quick ? " (--quick)" : "",
                o_.cpu_time ? "; times are process CPU time (--cpu-time)" : "");
    std::printf("OpenBLAS core: %s (probe: %s)\n", peer::openblas::core().c_str(),
                std::getenv("PTO_COMPARE_OPENBLAS_PROBE")
                    ? std::getenv("PTO_COMPARE_OPENBLAS_PROBE")
                    : "-");
    std::printf("oneDNN ISA: %s\n", peer::onednn::isa().c_str());
    std::printf("ptojit pool threads (PTO_NUM_THREADS): %d; targets against peers on %d\n",
                pto::runtime::pool_threads(), th_);
    std::fflush(stdout);
  }

  // ---- limits --------------------------------------------------------------------------------
  void limits() {
    const int64_t n = (o_.quick ? 32 : 64) << 20; // floats per array: 128 / 256 MiB
    std::vector<float> a(static_cast<size_t>(n), 1.0f), b(a), c(a);
    for (int th = 1; th <= 2; ++th) {
      auto t = alternate({[&] { peer::limits::read(a.data(), n, th); },
                          [&] { peer::limits::copy(a.data(), b.data(), n, th); },
                          [&] { peer::limits::triad(c.data(), a.data(), b.data(), 3.0f, n, th); }},
                         o_.rounds);
      lim_.read[th - 1] = 4.0 * static_cast<double>(n) / t[0];
      lim_.copy[th - 1] = 8.0 * static_cast<double>(n) / t[1];
      lim_.triad[th - 1] = 12.0 * static_cast<double>(n) / t[2];
    }
    auto peak = [&](double (*f)(double)) {
      std::vector<double> v;
      for (int r = 0; r < 3; ++r)
        v.push_back(f(0.1));
      return median(v);
    };
    lim_.fma_zmm = peak(peer::limits::fma_peak_zmm);
    lim_.fma_ymm = peak(peer::limits::fma_peak_ymm);
    lim_.dpbf16 = peak(peer::limits::dpbf16_peak_zmm);
    std::printf("limits: read %.1f / %.1f GB/s, copy %.1f / %.1f, triad %.1f / %.1f (1 / 2 "
                "threads); FMA peak %.0f GFLOP/s zmm, %.0f ymm; vdpbf16ps %s (one core)\n",
                lim_.read[0] / 1e9, lim_.read[1] / 1e9, lim_.copy[0] / 1e9, lim_.copy[1] / 1e9,
                lim_.triad[0] / 1e9, lim_.triad[1] / 1e9, lim_.fma_zmm / 1e9, lim_.fma_ymm / 1e9,
                lim_.dpbf16 > 0
                    ? (std::to_string(static_cast<int>(lim_.dpbf16 / 1e9)) + " GFLOP/s").c_str()
                    : "n/a (no AVX512_BF16)");
    std::fflush(stdout);
  }

  static std::string frac(double f, const char *of) {
    char b[64];
    std::snprintf(b, sizeof b, "%.2f of %s", f, of);
    return b;
  }

  void add(Row r) {
    std::printf("  %-40s %-18s ours %-10s peer %-10s%s\n", r.name.c_str(), r.peer_name.c_str(),
                fmt_ms(r.ours * 1e3).c_str(), r.peer > 0 ? fmt_ms(r.peer * 1e3).c_str() : "-",
                r.wrong ? " WRONG" : "");
    std::fflush(stdout);
    rows_.push_back(std::move(r));
  }

  /// A row of ours against a peer: ratio target `min_ratio` (0: none) and, when `min_frac` >
  /// 0, the limit fraction `f` too.
  void compare(const std::string &name, const std::string &peer, double ours, double theirs,
               bool wrong, double min_ratio, double f, const char *of, double min_frac) {
    Row r{name, peer, ours, theirs, f > 0 ? frac(f, of) : "", "-", -1, wrong};
    if (min_ratio > 0) {
      char b[64];
      std::snprintf(b, sizeof b, ">= %.2gx", min_ratio);
      r.target = b;
      if (min_frac > 0) {
        std::snprintf(b, sizeof b, ", >= %.2g of %s", min_frac, of);
        r.target += b;
      }
      r.met = !wrong && theirs / ours >= min_ratio && (min_frac <= 0 || f >= min_frac);
    }
    add(std::move(r));
  }

  static std::string dt_name(pto::DataType dt) { return dt == pto::DT_FP32 ? "fp32" : "bf16"; }

  static bool differs(const pto::HostTensor &got, const pto::HostTensor &want, double tol) {
    return bench::worst_mismatch(got, want, tol, tol) > 1;
  }

  // ---- the cases -----------------------------------------------------------------------------
  void softmax(pto::DataType dt, int64_t rows, int64_t cols, double min_ratio, double min_frac) {
    const std::string name = "softmax " + bench::dims(rows, cols) + " " + dt_name(dt) + ", 1 PE";
    if (!wanted(name))
      return;
    auto x = bench::random_tensor(dt, {rows, cols}, 1);
    pto::HostTensor y(dt, {rows, cols}), yd(dt, {rows, cols});
    auto k = pto::jit("cmp_softmax", [](pto::Tensor xt, pto::Tensor yt) {
      pto::set_vec_tile_shapes(8, xt.shape(1).concrete());
      pto::Tensor xf = xt.dtype() == pto::DT_FP32 ? xt : pto::cast(xt, pto::DT_FP32);
      pto::Tensor s = pto::softmax(xf, -1);
      pto::assemble(xt.dtype() == pto::DT_FP32 ? s : pto::cast(s, xt.dtype()), {0, 0}, yt);
    });
    auto d = peer::onednn::Op::softmax(dt == pto::DT_BF16, rows, cols, x.data(), yd.data());
    Fn ours = [&] { k(x, y); };
    ours();
    d.run(1);
    bool wrong = differs(y, yd, dt == pto::DT_FP32 ? 1e-5 : 1e-2);
    auto t = alternate({ours, [&] { d.run(1); }, [&] { d.run(2); }}, o_.rounds);
    // The target is against oneDNN on as many threads as ptojit's pool uses (th_).
    double f = 2.0 * static_cast<double>(x.size_bytes()) / t[0] / lim_.best(lim_.copy, th_);
    const char *of = th_ == 1 ? "copy 1T" : "copy 1T/2T";
    compare(name, "oneDNN 1T", t[0], t[1], wrong, th_ == 1 ? min_ratio : 0, f, of,
            th_ == 1 ? min_frac : 0);
    compare(name, "oneDNN 2T", t[0], t[2], wrong, th_ == 2 ? min_ratio : 0, f, of,
            th_ == 2 ? min_frac : 0);
  }

  void layer_norm() {
    const int64_t rows = 4096, cols = 4096;
    const std::string name = "layer_norm 4096x4096 fp32, 1 PE";
    if (!wanted(name))
      return;
    auto x = bench::random_tensor(pto::DT_FP32, {rows, cols}, 3);
    pto::HostTensor y(pto::DT_FP32, {rows, cols}), yd(pto::DT_FP32, {rows, cols});
    auto k = pto::jit("cmp_layer_norm", [](pto::Tensor xt, pto::Tensor yt) {
      pto::set_vec_tile_shapes(8, xt.shape(1).concrete());
      pto::assemble(pto::layer_norm(xt, -1, {.eps = 1e-5}), {0, 0}, yt);
    });
    auto d =
        peer::onednn::Op::layer_norm(rows, cols, x.data_as<float>(), yd.data_as<float>(), 1e-5f);
    Fn ours = [&] { k(x, y); };
    ours();
    d.run(1);
    bool wrong = differs(y, yd, 1e-4);
    auto t = alternate({ours, [&] { d.run(1); }, [&] { d.run(2); }}, o_.rounds);
    double f = 2.0 * static_cast<double>(x.size_bytes()) / t[0] / lim_.best(lim_.copy, th_);
    const char *of = th_ == 1 ? "copy 1T" : "copy 1T/2T";
    compare(name, "oneDNN 1T", t[0], t[1], wrong, th_ == 1 ? 1.3 : 0, f, of, 0);
    compare(name, "oneDNN 2T", t[0], t[2], wrong, th_ == 2 ? 1.3 : 0, f, of, 0);
  }

  void row_reduce(bool is_sum) {
    const int64_t rows = 4096, cols = 4096;
    const std::string name =
        std::string("row ") + (is_sum ? "sum" : "amax") + " 4096x4096 fp32, 1 PE";
    if (!wanted(name))
      return;
    auto x = bench::random_tensor(pto::DT_FP32, {rows, cols}, 4);
    pto::HostTensor y(pto::DT_FP32, {rows, 1}), yp(pto::DT_FP32, {rows, 1});
    auto k =
        pto::jit(is_sum ? "cmp_row_sum" : "cmp_row_amax", [is_sum](pto::Tensor xt, pto::Tensor yt) {
          pto::set_vec_tile_shapes(8, xt.shape(1).concrete());
          auto r =
              is_sum ? pto::sum(xt, -1, {.keepdim = true}) : pto::amax(xt, -1, {.keepdim = true});
          pto::assemble(r, {0, 0}, yt);
        });
    Fn ours = [&] { k(x, y); };
    Fn peer = [&] {
      (is_sum ? peer::fast::row_sum : peer::fast::row_amax)(x.data_as<float>(), yp.data_as<float>(),
                                                            rows, cols);
    };
    ours();
    peer();
    bool wrong = differs(y, yp, 1e-4);
    auto t = alternate({ours, peer}, o_.rounds);
    double f = static_cast<double>(x.size_bytes()) / t[0] / lim_.best(lim_.read, th_);
    const char *of = th_ == 1 ? "read 1T" : "read 1T/2T";
    compare(name, "-ffast-math loop 1T", t[0], t[1], wrong, 0, f, of, 0);
    Row r{name,
          th_ == 1 ? "read bandwidth 1T" : "read bandwidth 1T/2T",
          t[0],
          0,
          frac(f, of),
          th_ == 1 ? ">= 0.85 of read 1T" : ">= 0.85 of read 1T/2T",
          !wrong && f >= 0.85,
          wrong};
    add(std::move(r));
  }

  /// Reference rows: ptojit with its pool (pto/runtime/pool.h) against ptojit on one thread,
  /// alternating in this run (PTO_NUM_THREADS only sets the pool's size).
  void pool_speedup() {
    const int n = pto::runtime::pool_threads();
    if (n < 2)
      return;
    struct Case {
      const char *name, *kernel;
      int64_t out_cols;
      std::function<pto::Tensor(pto::Tensor)> op;
    };
    const Case cases[] = {{"softmax 4096x4096 fp32", "cmp_pool_softmax", 4096,
                           [](pto::Tensor x) { return pto::softmax(x, -1); }},
                          {"layer_norm 4096x4096 fp32", "cmp_pool_layer_norm", 4096,
                           [](pto::Tensor x) { return pto::layer_norm(x, -1, {.eps = 1e-5}); }},
                          {"row sum 4096x4096 fp32", "cmp_pool_sum", 1,
                           [](pto::Tensor x) { return pto::sum(x, -1, {.keepdim = true}); }},
                          {"row amax 4096x4096 fp32", "cmp_pool_amax", 1,
                           [](pto::Tensor x) { return pto::amax(x, -1, {.keepdim = true}); }}};
    auto pool_row = [&](const std::string &name, const Fn &run) {
      Fn one = [&] {
        pto::runtime::set_pool_threads(1);
        run();
      };
      Fn all = [&] {
        pto::runtime::set_pool_threads(n);
        run();
      };
      auto t = alternate({all, one}, o_.rounds);
      pto::runtime::set_pool_threads(n);
      compare(name, "ptojit 1 thread", t[0], t[1], false, 0, 0, "", 0);
    };
    const std::string threads = ", " + std::to_string(n) + " threads";
    for (const Case &c : cases) {
      const std::string name = std::string("pool: ") + c.name + threads;
      if (!wanted(name))
        continue;
      auto x = bench::random_tensor(pto::DT_FP32, {4096, 4096}, 8);
      pto::HostTensor y(pto::DT_FP32, {4096, c.out_cols});
      auto k = pto::jit(c.kernel, [&](pto::Tensor xt, pto::Tensor yt) {
        pto::set_vec_tile_shapes(8, 4096);
        pto::assemble(c.op(xt), {0, 0}, yt);
      });
      pool_row(name, [&] { k(x, y); });
    }
    // The matmul's row panels on the pool (a smaller case than the peers' so it stays short).
    const std::string mm = "pool: matmul fp32 1024^3" + threads;
    if (wanted(mm)) {
      const int64_t m = 1024;
      auto a = bench::random_tensor(pto::DT_FP32, {m, m}, 6);
      auto b = bench::random_tensor(pto::DT_FP32, {m, m}, 7);
      pto::HostTensor c(pto::DT_FP32, {m, m});
      auto k = pto::jit("cmp_pool_matmul", [](pto::Tensor at, pto::Tensor bt, pto::Tensor ct) {
        pto::set_cube_tile_shapes({48, 96}, {64, 256}, {64, 256});
        pto::set_vec_tile_shapes(64, 256);
        pto::assemble(pto::matmul(at, bt, pto::DT_FP32), {0, 0}, ct);
      });
      pool_row(mm, [&] { k(a, b, c); });
    }
  }

  void chain(pto::DataType dt) {
    const int64_t total = (o_.quick ? 128 : 512) << 20; // bytes of x and y together
    const int64_t cols = 1024, rows = total / 2 / pto::bytes_of(dt) / cols;
    const std::string name =
        std::string("exp chain ") + dt_name(dt) + " " + std::to_string(total >> 20) + " MiB, 1 PE";
    if (!wanted(name))
      return;
    constexpr float kA = 0.5f, kB = 0.25f, kC = 3.0f;
    auto x = bench::random_tensor(dt, {rows, cols}, 5);
    pto::HostTensor y(dt, {rows, cols}), yp(dt, {rows, cols});
    auto k = pto::jit("cmp_chain", [](pto::Tensor xt, pto::Tensor yt) {
      pto::set_vec_tile_shapes(8, 1024);
      pto::Tensor xf = xt.dtype() == pto::DT_FP32 ? xt : pto::cast(xt, pto::DT_FP32);
      pto::Tensor r = pto::exp(xf * kA + kB) - xf / kC;
      pto::assemble(xt.dtype() == pto::DT_FP32 ? r : pto::cast(r, xt.dtype()), {0, 0}, yt);
    });
    Fn ours = [&] { k(x, y); };
    Fn peer = [&] {
      const int64_t n = rows * cols;
      if (dt == pto::DT_FP32)
        peer::fast::fused_chain(x.data_as<float>(), yp.data_as<float>(), n, kA, kB, kC);
      else
        peer::fast::fused_chain_bf16(x.data_as<uint16_t>(), yp.data_as<uint16_t>(), n, kA, kB, kC);
    };
    ours();
    peer();
    bool wrong = differs(y, yp, dt == pto::DT_FP32 ? 1e-5 : 1e-2);
    auto t = alternate({ours, peer}, o_.rounds);
    double bytes = static_cast<double>(total);
    double f = bytes / t[0] / lim_.best(lim_.triad, th_), fp = bytes / t[1] / lim_.triad[0];
    // The bandwidth part of the target holds where the work is memory-bound: where the peer
    // reaches 0.85 of triad.
    Row r{name,
          "-ffast-math loop 1T",
          t[0],
          t[1],
          frac(f, th_ == 1 ? "triad 1T" : "triad 1T/2T"),
          th_ == 1 ? ">= 1x; >= 0.85 of triad 1T if memory-bound"
                   : ">= 1x; >= 0.85 of triad 1T/2T if memory-bound",
          0,
          wrong};
    r.met = !wrong && t[1] / t[0] >= 1.0 && (f >= 0.85 || fp < 0.85);
    add(std::move(r));
  }

  void matmul(pto::DataType dt) {
    const int64_t n = 2048;
    const std::string name = std::string("matmul ") + dt_name(dt) + " 2048^3, 1 PE";
    if (!wanted(name))
      return;
    auto a = bench::random_tensor(dt, {n, n}, 6), b = bench::random_tensor(dt, {n, n}, 7);
    pto::HostTensor c(pto::DT_FP32, {n, n}), cb(pto::DT_FP32, {n, n}), cd(pto::DT_FP32, {n, n});
    auto k = pto::jit("cmp_matmul", [](pto::Tensor at, pto::Tensor bt, pto::Tensor ct) {
      pto::set_cube_tile_shapes({48, 96}, {64, 256}, {64, 256});
      pto::set_vec_tile_shapes(64, 256);
      pto::assemble(pto::matmul(at, bt, pto::DT_FP32), {0, 0}, ct);
    });
    const bool bf = dt == pto::DT_BF16;
    auto d = peer::onednn::Op::matmul(bf, n, n, n, a.data(), b.data(), cd.data_as<float>());
    Fn ours = [&] { k(a, b, c); };
    ours();
    d.run(1);
    // Sums of 2048 products of normal(0, 1) values (about 45 in size): differences of the
    // summation order stay far below 1e-3 relative / absolute.
    bool wrong = differs(c, cd, 1e-3);
    std::vector<Fn> fns = {ours, [&] { d.run(1); }, [&] { d.run(2); }};
    if (!bf) {
      auto ob = [&](int th) {
        peer::openblas::sgemm(n, n, n, a.data_as<float>(), b.data_as<float>(), cb.data_as<float>(),
                              th);
      };
      ob(1);
      wrong = wrong || differs(c, cb, 1e-3);
      fns.push_back([ob] { ob(1); });
      fns.push_back([ob] { ob(2); });
    }
    // fp32 on 2 PEs: each PE multiplies its half of A's rows (copies, so the halves are
    // tensors of their own) into its half of C.
    const int64_t h = n / 2;
    std::vector<pto::HostTensor> ah, ch;
    std::unique_ptr<pto::runtime::World> world;
    if (!bf) {
      for (int pe = 0; pe < 2; ++pe) {
        ah.emplace_back(dt, std::vector<int64_t>{h, n});
        ch.emplace_back(pto::DT_FP32, std::vector<int64_t>{h, n});
        std::memcpy(ah.back().data(), a.data_as<float>() + pe * h * n,
                    static_cast<size_t>(ah.back().size_bytes()));
      }
      world = std::make_unique<pto::runtime::World>(2);
      fns.push_back([&] { world->run([&](int pe) { k(ah[size_t(pe)], b, ch[size_t(pe)]); }); });
      fns.back()();
      for (int pe = 0; pe < 2 && !wrong; ++pe)
        for (int64_t i = 0; i < h * n && !wrong; ++i)
          wrong =
              std::abs(ch[size_t(pe)].data_as<float>()[i] - c.data_as<float>()[pe * h * n + i]) >
              1e-3 * (1 + std::abs(c.data_as<float>()[pe * h * n + i]));
    }
    auto t = alternate(fns, o_.rounds);
    const double flops = 2.0 * n * n * n / t[0];
    // bf16's limit: the faster of vdpbf16ps and fp32 FMA on widened operands (either can be).
    const bool dot_peak = bf && lim_.dpbf16 > lim_.fma();
    const double peak = dot_peak ? lim_.dpbf16 : lim_.fma();
    const char *of = dot_peak           ? "vdpbf16ps peak"
                     : lim_.fma_zmm > 0 ? "FMA zmm peak"
                                        : "FMA ymm peak";
    // One PE runs on th_ threads (its pool splits the row panels): the target is against the
    // peers on as many threads, the limit th_ cores' peak.
    const double f = flops / peak;
    const double ft = f / th_;
    const std::string oft = th_ == 1 ? of : std::string("2-core ") + of;
    if (bf) {
      compare(name, "oneDNN 1T", t[0], t[1], wrong, th_ == 1 ? 0.9 : 0, f, of, 0);
      compare(name, "oneDNN 2T", t[0], t[2], wrong, th_ == 2 ? 0.9 : 0, ft, oft.c_str(), 0);
      return;
    }
    compare(name, "OpenBLAS 1T", t[0], t[3], wrong, th_ == 1 ? 1.0 : 0, f, of, 0.85);
    compare(name, "oneDNN 1T", t[0], t[1], wrong, th_ == 1 ? 1.0 : 0, f, of, 0.85);
    compare(name, "OpenBLAS 2T", t[0], t[4], wrong, th_ == 2 ? 1.0 : 0, ft, oft.c_str(), 0.85);
    compare(name, "oneDNN 2T", t[0], t[2], wrong, th_ == 2 ? 1.0 : 0, ft, oft.c_str(), 0.85);
    // 2 PEs use both cores: the peers with 2 threads; the limit is both cores' FMA peak.
    const std::string name2 = "matmul fp32 2048^3, 2 PEs";
    const double f2 = 2.0 * n * n * n / t[5] / (2 * peak);
    compare(name2, "OpenBLAS 2T", t[5], t[4], wrong, 1.0, f2, "2-core FMA zmm peak", 0.85);
    compare(name2, "oneDNN 2T", t[5], t[2], wrong, 1.0, f2, "2-core FMA zmm peak", 0.85);
  }

  void tiny() {
    const std::string name = "tiny call 8x16 add, cache hit";
    if (!wanted(name))
      return;
    auto x = bench::random_tensor(pto::DT_FP32, {8, 16}, 8);
    auto y = bench::random_tensor(pto::DT_FP32, {8, 16}, 9);
    pto::HostTensor z(pto::DT_FP32, {8, 16}), zd(pto::DT_FP32, {8, 16});
    auto k = pto::jit("cmp_tiny", [](pto::Tensor a, pto::Tensor b, pto::Tensor c) {
      pto::set_vec_tile_shapes(8, 16);
      pto::assemble(pto::add(a, b), {0, 0}, c);
    });
    auto d =
        peer::onednn::Op::add(8, 16, x.data_as<float>(), y.data_as<float>(), zd.data_as<float>());
    Fn ours = [&] { k(x, y, z); };
    ours();
    d.run(1);
    bool wrong = differs(z, zd, 1e-6);
    auto t = alternate({ours, [&] { d.run(1); }}, o_.rounds);
    Row r{name,        "oneDNN binary add 1T",   t[0], t[1], "",
          "<= 100 ns", !wrong && t[0] <= 100e-9, wrong};
    add(std::move(r));
  }

  /// Trace + compile + first call of a kernel no cache holds (a shape not seen before).
  void cold() {
    struct Kind {
      const char *what;
      double limit_ms;
    };
    static int64_t fresh = 0; // a new row count per kernel: a new signature, a new program
    // Trace + compile (or load) + first call of a new kernel object of kind `w` over `rows` rows.
    auto first_call = [](const std::string &w, int64_t rows) {
      auto x = bench::random_tensor(pto::DT_FP32, {rows, 64}, 10);
      auto w64 = bench::random_tensor(pto::DT_FP32, {64, 64}, 11);
      pto::HostTensor y(pto::DT_FP32, {rows, 64});
      double t0 = now_s();
      if (w == "matmul") {
        auto k = pto::jit("cmp_cold_mm", [](pto::Tensor a, pto::Tensor b, pto::Tensor c) {
          pto::set_cube_tile_shapes({16, 32}, {16, 64}, {16, 64});
          pto::set_vec_tile_shapes(16, 64);
          pto::assemble(pto::matmul(a, b, pto::DT_FP32), {0, 0}, c);
        });
        k(x, w64, y);
      } else {
        auto k = pto::jit("cmp_cold", [w](pto::Tensor a, pto::Tensor b) {
          pto::set_vec_tile_shapes(8, 64);
          pto::assemble(w == "softmax" ? pto::softmax(a, -1) : pto::exp(a * 0.5 + 0.25) - a, {0, 0},
                        b);
        });
        k(x, y);
      }
      return now_s() - t0;
    };
    for (Kind kd : {Kind{"elementwise", 10}, Kind{"softmax", 15}, Kind{"matmul", 30}}) {
      const std::string name = std::string("cold JIT ") + kd.what;
      if (!wanted(name))
        continue;
      std::vector<double> t;
      {
        // Cold means no cache at all: an earlier run of compare stored these very programs in
        // the on-disk cache (the same row counts each run).
        const char *old = std::getenv("PTO_CACHE");
        const std::string saved = old ? old : "";
        ::setenv("PTO_CACHE", "0", 1);
        for (int r = 0; r < o_.rounds; ++r)
          t.push_back(first_call(kd.what, 64 + ++fresh));
        if (old)
          ::setenv("PTO_CACHE", saved.c_str(), 1);
        else
          ::unsetenv("PTO_CACHE");
      }
      double m = median(t);
      char tgt[32];
      std::snprintf(tgt, sizeof tgt, "<= %g ms", kd.limit_ms);
      add(Row{name, "-", m, 0, "", tgt, m * 1e3 <= kd.limit_ms, false});
    }
    if (wanted("warm disk cache"))
      warm_disk(first_call, fresh);
  }

  /// The same first call when the on-disk cache holds the program and the in-memory one does
  /// not (what a new process sees for a kernel an earlier one compiled; the process's one-time
  /// JIT setup is not counted). Each kernel of the cold rows is compiled once into a private
  /// cache directory (never the user's), then called from new kernel objects with the in-memory
  /// cache bounded to 0 bytes. The median over kernels and rounds.
  template <class FirstCall> void warm_disk(FirstCall &first_call, int64_t &fresh) {
    std::string dir = "/tmp/ptojit-compare-cache.XXXXXX";
    if (!::mkdtemp(dir.data())) {
      rows_.push_back(Row{"warm disk cache, per kernel", "-", 0, 0, "no temporary directory",
                          "<= 1 ms", 0, false});
      return;
    }
    const char *old_dir = std::getenv("PTO_CACHE_DIR");
    const std::string saved = old_dir ? old_dir : "";
    ::setenv("PTO_CACHE_DIR", dir.c_str(), 1);
    pto::set_jit_cache_limit(0);
    const auto s0 = pto::jit_cache_stats();
    std::vector<double> t;
    for (const char *w : {"elementwise", "softmax", "matmul"}) {
      const int64_t rows = 64 + ++fresh;
      first_call(w, rows); // compiles and stores
      for (int r = 0; r < o_.rounds; ++r)
        t.push_back(first_call(w, rows));
    }
    const auto s1 = pto::jit_cache_stats();
    pto::set_jit_cache_limit(std::nullopt);
    if (old_dir)
      ::setenv("PTO_CACHE_DIR", saved.c_str(), 1);
    else
      ::unsetenv("PTO_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    const int64_t hits = s1.disk_hits - s0.disk_hits;
    const bool all_hit = hits == static_cast<int64_t>(t.size());
    double m = median(t);
    add(Row{"warm disk cache, per kernel", "-", m, 0,
            all_hit ? "" : "not every call hit the disk cache (PTO_CACHE=0?)", "<= 1 ms",
            all_hit && m * 1e3 <= 1.0, false});
  }

  // ---- the table -----------------------------------------------------------------------------
  void table() {
    std::printf("\n| case | ours | peer | peer time | ratio | limit | target | met |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    int met = 0, counted = 0;
    for (const Row &r : rows_) {
      char ratio[32] = "-";
      if (r.peer > 0 && r.ours > 0)
        std::snprintf(ratio, sizeof ratio, "%.2f", r.peer / r.ours);
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.name.c_str(),
                  r.wrong      ? "WRONG"
                  : r.ours > 0 ? fmt_ms(r.ours * 1e3).c_str()
                               : "n/a",
                  r.peer_name.c_str(), r.peer > 0 ? fmt_ms(r.peer * 1e3).c_str() : "-", ratio,
                  r.limit.empty() ? "-" : r.limit.c_str(), r.target.c_str(),
                  r.met < 0 ? "-"
                  : r.met   ? "yes"
                            : "no");
      if (r.met >= 0) {
        ++counted;
        met += r.met;
      }
    }
    std::printf("\nsummary: %d/%d cases at target\n", met, counted);
  }
};

} // namespace

int run_all(const Options &o) {
  g_cpu_time = o.cpu_time;
  return Runner(o).run();
}

} // namespace cmp
