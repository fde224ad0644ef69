// lower_matmul_geometry.cpp - The register block and the cache blocking of the matmul
// micro-kernel for this host (lower_matmul_geometry.h).
#include "llvm/lower_matmul_geometry.h"

#include "llvm/host_target.h"

#include <algorithm>
#include <optional>
#include <unistd.h>

namespace pto::codegen {

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// A data cache size from sysconf, or `fallback` when the host does not say (some VMs).
int64_t cache_bytes(int name, int64_t fallback) {
  long v = sysconf(name);
  return v >= 16 * 1024 && v <= 64 * 1024 * 1024 ? v : fallback;
}

/// The test hook's setting (lower_matmul_geometry.h).
std::optional<bool> &dpbf16_override() {
  static std::optional<bool> v;
  return v;
}

} // namespace

void set_matmul_dpbf16_for_tests(std::optional<bool> use) { dpbf16_override() = use; }

MatmulGeometry matmul_geometry(DataType in, int64_t m, int64_t k, int64_t n) {
  const HostTarget &t = host_target();
  MatmulGeometry g;
  const bool avx512 = t.isa >= Isa::Avx512;
  g.lanes = avx512 ? 16 : 8;
  g.mr = avx512 ? 14 : 6;
  g.nr = 2 * g.lanes;
  g.dpbf16 = in == DT_BF16 && avx512 && target_has_feature(t, "avx512bf16") &&
             dpbf16_override().value_or(!target_has_feature(t, "amx-bf16"));
  g.kg = in == DT_INT8 || g.dpbf16 ? 2 : 1;
  const int64_t l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 * 1024);
  const int64_t l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 256 * 1024);
  // The row loop is outside the column loop: an A micro-panel (mr x kcu units) stays in L1
  // while the B micro-panels (kcu x nr, 2/3 of L1 each) stream past from the B block (kcu x nc),
  // which takes half of L2; the A block (mc x kcu) is packing granularity (half of L2 too).
  g.kcu = std::clamp<int64_t>(l1 * 2 / 3 / (g.nr * 4) / 16 * 16, 64, 512);
  g.mc = std::clamp<int64_t>(l2 / 2 / (g.kcu * 4) / g.mr * g.mr, g.mr, 4096 / g.mr * g.mr);
  g.nc = std::clamp<int64_t>(l2 / 2 / (g.kcu * 4) / g.nr * g.nr, 4 * g.nr, 4096);
  if (k > 0)
    g.kcu = std::min(g.kcu, (k + g.kg - 1) / g.kg);
  if (m > 0)
    g.mc = std::min(g.mc, round_up(m, g.mr));
  if (n > 0)
    g.nc = std::min(g.nc, round_up(n, g.nr));
  return g;
}

} // namespace pto::codegen
