// block_copy.cpp - See block_copy.h. A block is first collapsed (unit dims dropped, contiguous
// neighbours merged), then walked row by row; each innermost row is one loop.
#include "block_copy.h"

#include "pto/dtype.h"
#include "pto/element.h"
#include "pto/env.h"
#include "pto/runtime/signal.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace pto::runtime::detail {

using pto::element::BF16;
using pto::element::Bool8;
using pto::element::convert;
using pto::element::F16;

namespace {

static_assert(sizeof(pto_dtype) == sizeof(pto::DataType), "pto_dtype carries pto::DataType");

pto::DataType dtype_of(pto_dtype dt) { return static_cast<pto::DataType>(dt); }

// A block with unit dims dropped and contiguous neighbours merged; dims[n-1] is the innermost.
struct Walk {
  int n = 0;
  int64_t extent[4]{}, src_stride[4]{}, dst_stride[4]{};
};

Walk collapse(const pto_block &b, const int64_t *src_stride, const int64_t *dst_stride) {
  Walk w;
  for (int d = 3; d >= 0; --d) { // innermost first
    if (b.extent[d] == 1)
      continue;
    if (w.n > 0) {
      const int t = w.n - 1; // the dim just inside this one
      if (src_stride[d] == w.extent[t] * w.src_stride[t] &&
          dst_stride[d] == w.extent[t] * w.dst_stride[t]) {
        w.extent[t] *= b.extent[d];
        continue;
      }
    }
    w.extent[w.n] = b.extent[d];
    w.src_stride[w.n] = src_stride[d];
    w.dst_stride[w.n] = dst_stride[d];
    ++w.n;
  }
  if (w.n == 0) { // a single element
    w.extent[0] = 1;
    w.n = 1;
  }
  std::reverse(w.extent, w.extent + w.n);
  std::reverse(w.src_stride, w.src_stride + w.n);
  std::reverse(w.dst_stride, w.dst_stride + w.n);
  return w;
}

// Calls row(src, dst, n) for every innermost row; strides of the row are w.*_stride[w.n-1].
template <class Row>
void for_each_row(const Walk &w, const std::byte *src, int64_t src_esize, std::byte *dst,
                  int64_t dst_esize, Row &&row) {
  int64_t e[3] = {1, 1, 1}, ss[3] = {0, 0, 0}, ds[3] = {0, 0, 0};
  for (int d = 0; d + 1 < w.n; ++d) { // outer dims, right-aligned into e[3]
    const int k = 3 - (w.n - 1) + d;
    e[k] = w.extent[d];
    ss[k] = w.src_stride[d] * src_esize;
    ds[k] = w.dst_stride[d] * dst_esize;
  }
  const int64_t len = w.extent[w.n - 1];
  for (int64_t i0 = 0; i0 < e[0]; ++i0)
    for (int64_t i1 = 0; i1 < e[1]; ++i1)
      for (int64_t i2 = 0; i2 < e[2]; ++i2)
        row(src + i0 * ss[0] + i1 * ss[1] + i2 * ss[2], dst + i0 * ds[0] + i1 * ds[1] + i2 * ds[2],
            len);
}

template <class S, class D> void set_rows(const Walk &w, const std::byte *src, std::byte *dst) {
  const int64_t sst = w.src_stride[w.n - 1], dst_st = w.dst_stride[w.n - 1];
  if (std::is_same_v<S, D> && sst == 1 && dst_st == 1) {
    for_each_row(w, src, sizeof(S), dst, sizeof(D),
                 [](const std::byte *s, std::byte *d, int64_t n) {
                   std::memmove(d, s, size_t(n) * sizeof(S)); // src may be this PE's own heap
                 });
    return;
  }
  for_each_row(w, src, sizeof(S), dst, sizeof(D), [&](const std::byte *s, std::byte *d, int64_t n) {
    const S *sp = reinterpret_cast<const S *>(s);
    D *dp = reinterpret_cast<D *>(d);
    if (sst == 1 && dst_st == 1) { // unit strides: lets the compiler vectorize the conversion
      for (int64_t i = 0; i < n; ++i)
        dp[i] = convert<S, D>(sp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        dp[i * dst_st] = convert<S, D>(sp[i * sst]);
    }
  });
}

// ---- ADD ------------------------------------------------------------------------------------

// One stripe lock: a test-and-test-and-set lock that spins briefly, then sleeps in a futex (state
// 0 free, 1 held, 2 held with sleepers; Drepper, "Futexes Are Tricky", mutex 2). Uncontended it
// costs one compare-exchange and one exchange, as a mutex; contended it hands over in
// nanoseconds while the holder runs, instead of the ~20 us of a futex round trip.
class StripeLock {
public:
  void lock() {
    int32_t c = 0;
    if (state_.compare_exchange_strong(c, 1, std::memory_order_acquire))
      return;
    for (int i = 0; i < kSpins; ++i) {
      if (state_.load(std::memory_order_relaxed) == 0) {
        c = 0;
        if (state_.compare_exchange_weak(c, 1, std::memory_order_acquire))
          return;
      }
    }
    c = state_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      futex_wait(word(), 2, 1000);
      c = state_.exchange(2, std::memory_order_acquire);
    }
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2)
      futex_wake_one(word());
  }

private:
  static constexpr int kSpins = 2000;
  int32_t *word() { return reinterpret_cast<int32_t *>(&state_); }
  std::atomic<int32_t> state_{0};
};
static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t));

// ADD puts lock the destination in 4 KiB stripes (by address, so across PEs and groups) and add
// with plain, vectorized loops: no update is lost, since every adder of an element holds its
// stripe, and one lock per stripe costs far less than a compare-exchange per element. One stripe
// lock is held at a time, so two adders can never wait on each other.
constexpr int kStripeShift = 12;
constexpr size_t kStripes = 1024;
struct alignas(64) PaddedLock {
  StripeLock lock;
};
StripeLock &stripe_lock(const std::byte *p) {
  static PaddedLock locks[kStripes];
  auto a = reinterpret_cast<uintptr_t>(p) >> kStripeShift;
  return locks[(a ^ (a >> 10)) % kStripes].lock;
}

template <class S, class D> inline D add_one(D old, S v) {
  if constexpr (std::is_same_v<D, F16>)
    return F16{pto::fp32_to_fp16(pto::fp16_to_fp32(old.bits) + convert<S, float>(v))};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{pto::fp32_to_bf16(pto::bf16_to_fp32(old.bits) + convert<S, float>(v))};
  else if constexpr (std::is_floating_point_v<D>)
    return D(old + convert<S, D>(v));
  else // integers wrap (two's complement)
    return D(std::make_unsigned_t<D>(old) + std::make_unsigned_t<D>(convert<S, D>(v)));
}

// The contiguous, same-dtype (and bf16 -> fp32) ADD rows, compiled for AVX-512, AVX2 and the
// baseline, chosen at run time by what the CPU supports (the runtime is built without -march).
// Dispatched by hand rather than with target_clones: an ifunc resolver runs before the
// sanitizers' runtimes are up. Pointers do not overlap (the caller checks).
template <class S, class D> inline D add_elem(D d, S s) {
  if constexpr (std::is_same_v<S, BF16>) { // bf16 -> fp32 is a shift: vectorizes as well
    const uint32_t bits = uint32_t(s.bits) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return d + v;
  } else {
    return add_one<S, D>(d, s);
  }
}
template <class S, class D>
__attribute__((always_inline)) inline void add_loop(D *__restrict d, const S *__restrict s,
                                                    int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    d[i] = add_elem<S, D>(d[i], s[i]);
}
template <class S, class D>
__attribute__((target("avx512f"))) void add_avx512(D *__restrict d, const S *__restrict s,
                                                   int64_t n) {
  add_loop<S, D>(d, s, n);
}
template <class S, class D>
__attribute__((target("avx2"))) void add_avx2(D *__restrict d, const S *__restrict s, int64_t n) {
  add_loop<S, D>(d, s, n);
}
template <class S, class D> void add_base(D *__restrict d, const S *__restrict s, int64_t n) {
  add_loop<S, D>(d, s, n);
}

enum class Isa { Base, Avx2, Avx512 };
// The host's level, capped by PTO_ISA as the JIT is (codegen/passes/isa.h: read once per process;
// avx2 caps at AVX2, sse4 and sse2 at the baseline; native, avx512 or unset: the host's own).
// Values the JIT refuses never reach here: tracing a kernel fails first.
Isa host_isa() {
  static const Isa isa = [] {
    const Isa host = __builtin_cpu_supports("avx512f") ? Isa::Avx512
                     : __builtin_cpu_supports("avx2")  ? Isa::Avx2
                                                       : Isa::Base;
    const std::string cap = env::raw(env::var("PTO_ISA")).value_or("");
    if (cap == "avx2")
      return std::min(host, Isa::Avx2);
    if (cap == "sse4" || cap == "sse2")
      return Isa::Base;
    return host;
  }();
  return isa;
}

// True for the pairs that have vector kernels.
template <class S, class D>
inline constexpr bool has_vector_add_v =
    (std::is_same_v<S, D> &&
     (std::is_same_v<D, float> || std::is_same_v<D, double> || std::is_same_v<D, int32_t> ||
      std::is_same_v<D, int64_t> || std::is_same_v<D, int16_t> || std::is_same_v<D, int8_t>)) ||
    (std::is_same_v<S, BF16> && std::is_same_v<D, float>);

// A contiguous row d[0, n) += s[0, n): the vector kernel when there is one for the pair and the
// ranges do not overlap, else the scalar loop.
template <class S, class D> void add_row(D *d, const S *s, int64_t n) {
  const auto db = reinterpret_cast<uintptr_t>(d), sb = reinterpret_cast<uintptr_t>(s);
  const bool disjoint = db + uintptr_t(n) * sizeof(D) <= sb || sb + uintptr_t(n) * sizeof(S) <= db;
  if constexpr (has_vector_add_v<S, D>) {
    if (disjoint) {
      switch (host_isa()) {
      case Isa::Avx512:
        return add_avx512<S, D>(d, s, n);
      case Isa::Avx2:
        return add_avx2<S, D>(d, s, n);
      case Isa::Base:
        return add_base<S, D>(d, s, n);
      }
    }
  }
  for (int64_t k = 0; k < n; ++k)
    d[k] = add_one<S, D>(d[k], s[k]);
}

template <class S, class D> void add_rows(const Walk &w, const std::byte *src, std::byte *dst) {
  const int64_t sst = w.src_stride[w.n - 1], dst_st = w.dst_stride[w.n - 1];
  for_each_row(w, src, sizeof(S), dst, sizeof(D), [&](const std::byte *s, std::byte *d, int64_t n) {
    const S *sp = reinterpret_cast<const S *>(s);
    D *dp = reinterpret_cast<D *>(d);
    int64_t i = 0;
    while (i < n) {
      // The elements of this row that share dp[i]'s stripe.
      const auto *first = reinterpret_cast<const std::byte *>(dp + i * dst_st);
      const uintptr_t stripe_end = ((reinterpret_cast<uintptr_t>(first) >> kStripeShift) + 1)
                                   << kStripeShift;
      const int64_t step = dst_st * int64_t(sizeof(D));
      int64_t j = n;
      if (step > 0) {
        const int64_t fit =
            int64_t(stripe_end - reinterpret_cast<uintptr_t>(first) + uintptr_t(step) - 1) / step;
        j = std::min(n, i + fit);
      }
      StripeLock &lock = stripe_lock(first);
      lock.lock();
      if (sst == 1 && dst_st == 1) {
        add_row<S, D>(dp + i, sp + i, j - i);
      } else {
        for (int64_t k = i; k < j; ++k)
          dp[k * dst_st] = add_one<S, D>(dp[k * dst_st], sp[k * sst]);
      }
      lock.unlock();
      i = j;
    }
  });
}

} // namespace

int64_t element_size(pto_dtype dt) {
  return pto::is_supported(dtype_of(dt)) ? pto::bytes_of(dtype_of(dt)) : 0;
}

void block_span(const pto_block &b, const int64_t *stride, int64_t esize, __int128 &lo,
                __int128 &hi) {
  lo = 0;
  hi = 0;
  for (int d = 0; d < 4; ++d) {
    const __int128 span = __int128(b.extent[d] - 1) * stride[d] * esize;
    (span < 0 ? lo : hi) += span;
  }
  hi += esize - 1;
}

void copy_block(const pto_block &b, const std::byte *src, pto_dtype src_dt, std::byte *dst,
                pto_dtype dst_dt) {
  const Walk w = collapse(b, b.src_stride, b.dst_stride);
  pto::element::with_element_type(dtype_of(src_dt), [&](auto s) {
    pto::element::with_element_type(
        dtype_of(dst_dt), [&](auto d) { set_rows<decltype(s), decltype(d)>(w, src, dst); });
  });
}

void add_block(const pto_block &b, const std::byte *src, pto_dtype src_dt, std::byte *dst,
               pto_dtype dst_dt) {
  const Walk w = collapse(b, b.src_stride, b.dst_stride);
  pto::element::with_element_type(dtype_of(src_dt), [&](auto s) {
    pto::element::with_element_type(dtype_of(dst_dt), [&](auto d) {
      if constexpr (!std::is_same_v<decltype(d), Bool8>)
        add_rows<decltype(s), decltype(d)>(w, src, dst);
    });
  });
}

void zero_block(const pto_block &b, std::byte *dst, int64_t esize) {
  const Walk w = collapse(b, b.dst_stride, b.dst_stride);
  const int64_t st = w.dst_stride[w.n - 1];
  for_each_row(w, dst, esize, dst, esize, [&](const std::byte *, std::byte *d, int64_t n) {
    if (st == 1)
      std::memset(d, 0, size_t(n * esize));
    else
      for (int64_t i = 0; i < n; ++i)
        std::memset(d + i * st * esize, 0, size_t(esize));
  });
}

} // namespace pto::runtime::detail
