// host_tensor.cpp - Owning host buffers with dtype-aware element access, size checks, bounds
// checks and the optional guards (canary bytes, a PROT_NONE page) of host_tensor.h.
#include "pto/host_tensor.h"

#include "pto/element.h"
#include "pto/env.h"
#include "pto/error.h"
#include "pto/size_math.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace pto {

namespace {

/// -1 until the environment is read (or set_default_guard is called), else a HostTensorGuard.
std::atomic<int> g_default_guard{-1};

constexpr int64_t kCanaryBytes = 64;

/// The canary pattern: byte `i` of a guard region (position-dependent, so a shifted copy of
/// the pattern or a run of one byte value is still caught).
uint8_t canary_byte(int64_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 0x3D)); }

void fill_canary(uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    p[i] = canary_byte(i);
}

/// Bytes of [p, p + n) that differ from the pattern, and the first of them.
int64_t count_damage(const uint8_t *p, int64_t n, int64_t &first) {
  int64_t bad = 0;
  first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (p[i] != canary_byte(i)) {
      if (first < 0)
        first = i;
      ++bad;
    }
  return bad;
}

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

[[noreturn]] void out_of_memory(const std::source_location &loc, int64_t bytes) {
  throw RuntimeError(loc, "HostTensor",
                     fmt::format("out of memory allocating {} bytes for the tensor", bytes));
}

} // namespace

HostTensorGuard HostTensor::default_guard(std::source_location loc) {
  int g = g_default_guard.load(std::memory_order_acquire);
  if (g >= 0)
    return static_cast<HostTensorGuard>(g);
  const std::string v =
      env::read_choice(env::var("PTO_HOST_TENSOR_GUARD"), loc, " (creating a HostTensor)")
          .value_or("none");
  const HostTensorGuard parsed = v == "canary"  ? HostTensorGuard::Canary
                                 : v == "pages" ? HostTensorGuard::Pages
                                                : HostTensorGuard::None;
  int expected = -1; // a concurrent set_default_guard wins
  g_default_guard.compare_exchange_strong(expected, static_cast<int>(parsed));
  return static_cast<HostTensorGuard>(g_default_guard.load(std::memory_order_acquire));
}

void HostTensor::set_default_guard(HostTensorGuard guard) {
  g_default_guard.store(static_cast<int>(guard), std::memory_order_release);
}

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, std::source_location loc)
    : HostTensor(dtype, std::move(shape), default_guard(loc), loc) {}

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, HostTensorGuard guard,
                       std::source_location loc)
    : dtype_(dtype), shape_(std::move(shape)), guard_(guard) {
  if (!is_supported(dtype))
    throw DTypeError(loc, "HostTensor",
                     "dtype " + name(dtype) + " is not supported; supported: " + kSupportedDtypes);
  if (shape_.size() > 8)
    throw ShapeError(loc, "HostTensor", fmt::format("rank {} is above 8", shape_.size()));
  for (auto d : shape_)
    if (d < 0)
      throw ShapeError(loc, "HostTensor", fmt::format("negative dim {}", d));
  const int64_t bytes =
      checked_dense_bytes(shape_, bytes_of(dtype), name(dtype), "HostTensor", loc);
  numel_ = bytes / bytes_of(dtype);
  try {
    allocate(bytes, loc);
  } catch (const std::bad_alloc &) { // the shared_ptr control block
    out_of_memory(loc, bytes);
  }
}

void HostTensor::allocate(int64_t bytes, const std::source_location &loc) {
  // bytes <= 2^62, so the padded sizes below cannot overflow.
  switch (guard_) {
  case HostTensorGuard::None: {
    // 64-byte aligned and zeroed; one extra cache line keeps zero-size tensors non-null.
    const int64_t alloc = round_up(bytes + 64, 64);
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, static_cast<size_t>(alloc)));
    if (!p)
      out_of_memory(loc, alloc);
    std::memset(p, 0, static_cast<size_t>(alloc));
    data_ = std::shared_ptr<uint8_t[]>(p, [](uint8_t *q) { std::free(q); });
    return;
  }
  case HostTensorGuard::Canary: {
    // [canary 64][data, 64-byte aligned][canary >= 64 up to the next cache line].
    const int64_t alloc = kCanaryBytes + round_up(bytes, 64) + kCanaryBytes;
    auto *base = static_cast<uint8_t *>(std::aligned_alloc(64, static_cast<size_t>(alloc)));
    if (!base)
      out_of_memory(loc, alloc);
    uint8_t *p = base + kCanaryBytes;
    std::memset(p, 0, static_cast<size_t>(bytes));
    before_bytes_ = kCanaryBytes;
    after_bytes_ = alloc - kCanaryBytes - bytes;
    fill_canary(base, before_bytes_);
    fill_canary(p + bytes, after_bytes_);
    data_ = std::shared_ptr<uint8_t[]>(p, [base](uint8_t *) { std::free(base); });
    return;
  }
  case HostTensorGuard::Pages: {
    // [canary pages ... | data][PROT_NONE page]: the data's last byte is the last readable one.
    const int64_t page = sysconf(_SC_PAGESIZE);
    const int64_t body = round_up(bytes + kCanaryBytes, page);
    const auto len = static_cast<size_t>(body + page);
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      out_of_memory(loc, static_cast<int64_t>(len));
    auto *base = static_cast<uint8_t *>(m);
    if (mprotect(base + body, static_cast<size_t>(page), PROT_NONE) != 0) {
      munmap(m, len);
      out_of_memory(loc, static_cast<int64_t>(len));
    }
    uint8_t *p = base + body - bytes; // element-aligned: bytes is a multiple of the element size
    before_bytes_ = body - bytes;
    fill_canary(base, before_bytes_); // mmap memory is already zero
    data_ = std::shared_ptr<uint8_t[]>(p, [m, len](uint8_t *) { munmap(m, len); });
    return;
  }
  }
}

std::string HostTensor::guard_damage() const {
  if (guard_ == HostTensorGuard::None || !data_)
    return "";
  const uint8_t *p = data_.get();
  const int64_t bytes = size_bytes();
  int64_t first_before = -1, first_after = -1;
  const int64_t before = count_damage(p - before_bytes_, before_bytes_, first_before);
  const int64_t after = count_damage(p + bytes, after_bytes_, first_after);
  if (before == 0 && after == 0)
    return "";
  std::string what = fmt::format("a {} {} tensor", dims_str(shape_), name(dtype_));
  std::string s;
  auto count = [](int64_t n) { return fmt::format("{} canary byte{}", n, n == 1 ? "" : "s"); };
  if (after > 0)
    s = fmt::format("{} after the data of {} overwritten (first at data + {})", count(after), what,
                    bytes + first_after);
  if (before > 0)
    s += fmt::format("{}{} before the data of {} overwritten (first at data - {})",
                     s.empty() ? "" : "; ", count(before), what, before_bytes_ - first_before);
  return s;
}

void HostTensor::check_index(int64_t i, const char *op, const std::source_location &loc) const {
  if (i < 0 || i >= numel_)
    throw ShapeError(loc, op,
                     fmt::format("index {} is outside [0, {}) (the elements of a {} {} tensor)", i,
                                 numel_, dims_str(shape_), name(dtype_)));
}

double HostTensor::get(int64_t i, std::source_location loc) const {
  check_index(i, "HostTensor::get", loc);
  return load(i);
}

void HostTensor::set(int64_t i, double v, std::source_location loc) {
  check_index(i, "HostTensor::set", loc);
  store(i, v);
}

double HostTensor::load(int64_t i) const {
  const uint8_t *p = data_.get() + i * bytes_of(dtype_);
  return is_float(dtype_) ? element::load_f(p, dtype_)
                          : static_cast<double>(element::load_i(p, dtype_));
}

void HostTensor::store(int64_t i, double v) {
  element::store_f(data_.get() + i * bytes_of(dtype_), dtype_, v);
}

void HostTensor::fill(double v) {
  for (int64_t i = 0; i < numel_; ++i)
    store(i, v);
}

} // namespace pto
