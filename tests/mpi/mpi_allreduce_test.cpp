// mpi_allreduce_test.cpp - pto_rt_allreduce on the MPI transport (allreduce_direct.cpp's
// windowed(): copies through a shared window on one node; with PTO_MPI_SHARED=0 gathered():
// MPI_Iallreduce where every order gives the same bits, else an all-to-all reduce-scatter and
// an allgather): every dtype x reduction x {dense, padded rows, strided, dense in place} valid
// regions, on the world (2 or 4 ranks) and on a group of 3 ranks, against a naive left
// fold x0 op x1 op ... op x(n-1) computed here from every member's (deterministic) input,
// compared bit for bit. The elements of y outside its valid region must keep their sentinel.
#include "pto/dtype.h"
#include "pto/half.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/context.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <type_traits>
#include <vector>

using namespace pto::runtime;

namespace {

enum Red : int32_t { kSum = 0, kMax = 1, kMin = 2, kProd = 3 };

struct Shape {
  const char *name;
  int rank;
  int64_t valid[4], xs[4], ys[4];
  bool in_place = false; ///< y is x (xs == ys)
};

// Totals not divisible by 2 or 3 (uneven blocks); one larger than 2048 * 4 (several chunks).
const Shape kShapes[] = {
    {"dense", 2, {5, 2003}, {2003, 1}, {2003, 1}},
    {"padded rows", 2, {7, 43}, {64, 1}, {57, 1}},
    {"strided", 3, {3, 5, 13}, {5 * 13 * 2 + 6, 13 * 2, 2}, {5 * 16 * 3, 16 * 3, 3}},
    {"dense in place", 2, {3, 2011}, {2011, 1}, {2011, 1}, true},
};

const pto::DataType kTypes[] = {pto::DT_INT8, pto::DT_INT16,  pto::DT_INT32, pto::DT_INT64,
                                pto::DT_FP32, pto::DT_DOUBLE, pto::DT_FP16,  pto::DT_BF16};

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// An fp input: varied magnitudes (sums round differently in another order), near 1 for
// products (no overflow), some signed zeros for max / min.
double fp_input(uint64_t h, int32_t red) {
  if (red == kProd)
    return 1.0 + double(int64_t(h % 201) - 100) / 1024.0;
  if ((red == kMax || red == kMin) && h % 7 == 0)
    return (h >> 8) % 2 ? -0.0 : 0.0;
  return double(int64_t(h % 2001) - 1000) / 7.0 * std::ldexp(1.0, int((h >> 16) % 16) - 12);
}

// Member q's element i (its bits, in the dtype) of case `c`.
uint64_t input_bits(pto::DataType dt, int32_t red, int c, int q, int64_t i) {
  const uint64_t h = mix((uint64_t(c) << 40) ^ (uint64_t(q) << 32) ^ uint64_t(i));
  const double v = fp_input(h, red);
  switch (dt) {
  case pto::DT_FP32: {
    const auto f = float(v);
    uint32_t b = 0;
    std::memcpy(&b, &f, 4);
    return b;
  }
  case pto::DT_DOUBLE: {
    uint64_t b = 0;
    std::memcpy(&b, &v, 8);
    return b;
  }
  case pto::DT_FP16:
    return pto::fp32_to_fp16(float(v));
  case pto::DT_BF16:
    return pto::fp32_to_bf16(float(v));
  default:
    return h; // integers: any bits (sums and products wrap)
  }
}

template <class F> F ref_max(F a, F b, bool is_max) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b) // -0 < +0
    return (std::signbit(a) == is_max) ? b : a;
  return (a > b) == is_max ? a : b;
}

template <class T> T from_bits(uint64_t b) {
  T v{};
  std::memcpy(&v, &b, sizeof v);
  return v;
}
template <class T> uint64_t to_bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

// The naive left fold of the members' bits v[0..n).
template <class T> uint64_t fold(const std::vector<uint64_t> &v, int32_t red) {
  T acc = from_bits<T>(v[0]);
  for (size_t q = 1; q < v.size(); ++q) {
    const T b = from_bits<T>(v[q]);
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      if (red == kSum)
        acc = T(U(U(acc) + U(b)));
      else if (red == kProd)
        acc = T(U(U(acc) * U(b)));
      else
        acc = red == kMax ? (acc < b ? b : acc) : (b < acc ? b : acc);
    } else {
      acc = red == kSum ? acc + b : red == kProd ? acc * b : ref_max(acc, b, red == kMax);
    }
  }
  return to_bits(acc);
}

uint64_t fold_half(const std::vector<uint64_t> &v, int32_t red, bool bf) {
  auto load = [&](uint64_t b) {
    return bf ? pto::bf16_to_fp32(uint16_t(b)) : pto::fp16_to_fp32(uint16_t(b));
  };
  auto store = [&](float f) { return bf ? pto::fp32_to_bf16(f) : pto::fp32_to_fp16(f); };
  float acc = load(v[0]);
  for (size_t q = 1; q < v.size(); ++q) {
    const float b = load(v[q]);
    if (red == kSum)
      acc += b; // in fp32, rounded once at the end
    else if (red == kProd)
      acc = load(store(acc * b)); // each product rounded to the half
    else
      acc = ref_max(acc, b, red == kMax);
  }
  return store(acc);
}

uint64_t expected(pto::DataType dt, int32_t red, const std::vector<uint64_t> &v) {
  switch (dt) {
  case pto::DT_INT8:
    return fold<int8_t>(v, red) & 0xff;
  case pto::DT_INT16:
    return fold<int16_t>(v, red) & 0xffff;
  case pto::DT_INT32:
    return fold<int32_t>(v, red) & 0xffffffff;
  case pto::DT_INT64:
    return fold<int64_t>(v, red);
  case pto::DT_FP32:
    return fold<float>(v, red);
  case pto::DT_DOUBLE:
    return fold<double>(v, red);
  case pto::DT_FP16:
    return fold_half(v, red, false);
  default:
    return fold_half(v, red, true);
  }
}

int64_t span_of(const Shape &s, const int64_t *st) {
  int64_t last = 0;
  for (int d = 0; d < s.rank; ++d)
    last += (s.valid[d] - 1) * st[d];
  return last + 1;
}

// Element offset of valid element i (row-major over the valid region) with strides st.
int64_t offset_of(const Shape &s, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    off += (i % s.valid[d]) * st[d];
    i /= s.valid[d];
  }
  return off;
}

int64_t count_of(const Shape &s) {
  int64_t t = 1;
  for (int d = 0; d < s.rank; ++d)
    t *= s.valid[d];
  return t;
}

constexpr uint64_t kSentinel = 0xa5a5a5a5a5a5a5a5ull;

// One kernel on `n`-member group `group` (this PE is member `me`) with one allreduce per case;
// returns the mismatches found (empty when every element is right).
std::vector<std::string> run_cases(const char *group, int n, int me) {
  struct Case {
    pto::DataType dt;
    int32_t red;
    const Shape *shape;
    std::vector<std::byte> x, y;
  };
  std::vector<Case> cases;
  for (pto::DataType dt : kTypes)
    for (int32_t red : {kSum, kMax, kMin, kProd})
      for (const Shape &s : kShapes) {
        Case k{dt, red, &s, {}, {}};
        const auto es = size_t(pto::bytes_of(dt));
        k.x.resize(size_t(span_of(s, s.xs)) * es);
        k.y.resize(size_t(span_of(s, s.ys)) * es);
        for (size_t b = 0; b < k.y.size(); ++b)
          k.y[b] = std::byte(kSentinel & 0xff);
        const int c = int(cases.size());
        for (int64_t i = 0; i < count_of(s); ++i) {
          const uint64_t bits = input_bits(dt, red, c, me, i);
          std::memcpy(&k.x[size_t(offset_of(s, s.xs, i)) * es], &bits, es);
        }
        cases.push_back(std::move(k));
      }
  pto_ctx *ctx = current_ctx();
  begin_call(ctx, nullptr, "allreduce_test");
  const uint64_t hash = 11;
  const int64_t heap = 128;
  const char *names[] = {group};
  std::vector<std::string> bad;
  if (pto_rt_kernel_enter(ctx, &hash, 1, &heap, &n, names, nullptr, nullptr) == PTO_OK) {
    for (Case &k : cases)
      if (pto_rt_allreduce(ctx, 0, k.red, k.dt, k.shape->rank, k.shape->valid, k.x.data(),
                           k.shape->xs, k.shape->in_place ? k.x.data() : k.y.data(), k.shape->ys,
                           -1) != PTO_OK)
        break;
    pto_rt_kernel_exit(ctx);
  }
  end_call(ctx); // throws the first error
  for (size_t c = 0; c < cases.size(); ++c) {
    if (cases[c].shape->in_place)
      cases[c].y = cases[c].x; // the result
    const Case &k = cases[c];
    const Shape &s = *k.shape;
    const auto es = size_t(pto::bytes_of(k.dt));
    std::vector<char> valid(k.y.size() / es, 0);
    int64_t wrong = 0;
    std::string first;
    for (int64_t i = 0; i < count_of(s); ++i) {
      std::vector<uint64_t> v(static_cast<size_t>(n));
      for (int q = 0; q < n; ++q)
        v[size_t(q)] = input_bits(k.dt, k.red, int(c), q, i);
      const uint64_t want = expected(k.dt, k.red, v);
      const auto off = size_t(offset_of(s, s.ys, i));
      valid[off] = 1;
      uint64_t got = 0;
      std::memcpy(&got, &k.y[off * es], es);
      if (got != want && wrong++ == 0)
        first = fmt::format("element {}: {:#x}, want {:#x}", i, got, want);
    }
    for (size_t e = 0; e < valid.size(); ++e) {
      uint64_t got = 0;
      std::memcpy(&got, &k.y[e * es], es);
      if (!valid[e] && got != (kSentinel & ((es == 8 ? 0 : uint64_t(1) << (8 * es)) - 1)) &&
          wrong++ == 0)
        first = fmt::format("element at offset {} outside the valid region written", e);
    }
    if (wrong)
      bad.push_back(fmt::format("{} {} reduction {} on {} ranks ({}): {} wrong, first {}",
                                pto::short_name(k.dt), s.name, k.red, n, group, wrong, first));
  }
  return bad;
}

} // namespace

TEST_CASE("mpi: pto_rt_allreduce of every dtype and reduction matches a naive left fold") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {}, make_mpi_backend(n));
  if (n >= 3)
    world.create_group("three", {0, 1, 2});
  std::vector<std::string> bad;
  world.run([&](int pe) { bad = run_cases("world", n, pe); });
  if (n >= 3)
    world.run([&](int pe) {
      if (pe < 3)
        for (std::string &b : run_cases("three", 3, pe))
          bad.push_back(std::move(b));
    });
  for (const std::string &b : bad)
    MESSAGE(b);
  CHECK(bad.empty());
}
