// program.cpp - Scalar elements, call-site names, value roots, strides and the symmetric-heap
// layout.
#include "pto/ir/program.h"

#include "pto/element.h"
#include "pto/error.h"
#include "pto/size_math.h"

#include <array>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pto::ir {

Scalar as_element(Scalar s, DataType dt) {
  s.dtype = dt;
  if (!s.is_int || !is_float(dt))
    return s;
  s.f = element::round_int(s.i, dt);
  s.is_int = false;
  return s;
}

const char *site_name(const Op &op) {
  if (op.kind == OpKind::Check && !op.label.empty())
    return op.label.c_str();
  return op.user_op ? op.user_op : op_info(op.kind).name;
}

const Scalar &scalar_of(const Op &op) {
  if (!op.scalar)
    throw InternalError("<codegen>", site_name(op), "the op has no scalar attribute");
  return *op.scalar;
}

const SlotGeometry &slots_of(const Op &op) {
  if (!op.slots)
    throw InternalError("<codegen>", site_name(op), "the op has no signal slot geometry");
  return *op.slots;
}

namespace {
/// `a + b` exactly when both are decimal int64s, else the two joined by " + ".
std::string exact_sum(const std::string &a, const std::string &b) {
  int64_t x = 0, y = 0;
  auto whole = [](const std::string &s, int64_t &v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  if (!whole(a, x) || !whole(b, y))
    return a + " + " + b;
  const __int128 sum = static_cast<__int128>(x) + y;
  const bool neg = sum < 0;
  auto u = static_cast<unsigned __int128>(neg ? -sum : sum); // |sum| <= 2^64: no overflow
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  } while (u > 0);
  return neg ? "-" + digits : digits;
}
} // namespace

std::string format_check(const std::string &message, const std::vector<std::string> &args) {
  std::string out;
  size_t next = 0;
  auto arg = [&]() -> std::string { return next < args.size() ? args[next++] : "?"; };
  for (size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    const char n = i + 1 < message.size() ? message[i + 1] : '\0';
    if (c == '{' && n == '}') {
      out += arg();
      ++i;
    } else if (c == '{' && n == '+' && i + 2 < message.size() && message[i + 2] == '}') {
      const std::string a = arg(), b = arg();
      out += exact_sum(a, b);
      i += 2;
    } else if ((c == '{' && n == '{') || (c == '}' && n == '}')) {
      out += c;
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_check(const std::string &text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}')
      out += c;
  }
  return out;
}

const Value &Program::root(ValueId id) const {
  const Value &v = value(id);
  return v.kind == ValueKind::View ? value(v.base) : v;
}

std::vector<SymbolicScalar> row_major_strides(const std::vector<SymbolicScalar> &shape) {
  std::vector<SymbolicScalar> s(shape.size(), SymbolicScalar(1));
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

namespace {
/// The data and signal bytes of `s` (as layout_shmem lays them out), or nullopt past the heap
/// limit.
std::optional<int64_t> data_bytes(const ShmemInfo &s) {
  if (s.shape.empty())
    return 0;
  auto b = dense_bytes(s.shape, bytes_of(s.dtype));
  if (!b || *b > kMaxSymmetricHeapBytes)
    return std::nullopt;
  return (*b + 511) / 512 * 512;
}
std::optional<int64_t> signal_bytes(const ShmemInfo &s) {
  auto b = mul_checked(int64_t{s.n_pes} * 8 * 4, s.max_tile_num); // n_pes * 8 int32 slots
  if (!b || *b > kMaxSymmetricHeapBytes)
    return std::nullopt;
  return (*b + 511) / 512 * 512;
}
} // namespace

std::optional<int64_t> group_heap_bytes(const Program &p, int group) {
  int64_t total = 0;
  for (const auto &s : p.shmems) {
    if (s.group_index != group)
      continue;
    auto d = data_bytes(s), sig = signal_bytes(s);
    if (!d || !sig)
      return std::nullopt;
    total += *d + *sig; // each <= 2^40 + 511 and total <= 2^40 below: no overflow
    if (total > kMaxSymmetricHeapBytes)
      return std::nullopt;
  }
  return total;
}

namespace {
// Group `g`'s shmem tensors as pto_rt_kernel_enter describes them (Group::layout).
std::string layout_text(const Program &p, int g) {
  std::string out;
  for (auto &s : p.shmems)
    if (s.group_index == g)
      out += (s.shape.empty() ? fmt::format("a signal of {} bytes", s.signal_bytes)
                              : fmt::format("{} [{}] with {} signal bytes", name(s.dtype),
                                            fmt::join(s.shape, ", "), s.signal_bytes)) +
             "\t" + s.where + "\n";
  for (auto &a : p.groups.at(static_cast<size_t>(g)).agreements)
    out += a + "\n";
  return out;
}
} // namespace

void layout_shmem(Program &p) {
  for (auto &g : p.groups)
    g.heap_bytes = 0;
  // First what kernel entry zeroes (data then signals, per tensor in creation order), then the
  // data of the tensors without zero_data, so that one prefix [0, zero_bytes) is zeroed.
  for (auto &s : p.shmems) {
    Group &g = p.groups.at(static_cast<size_t>(s.group_index));
    auto d = data_bytes(s), sig = signal_bytes(s);
    if (!d || !sig)
      throw InternalError("<trace>", "layout_shmem",
                          "shmem tensor sizes past the heap limit were not caught while tracing");
    s.data_bytes = *d;
    s.signal_bytes = *sig;
    if (s.zero_data) {
      s.data_offset_bytes = g.heap_bytes;
      g.heap_bytes += s.data_bytes;
    }
    s.signal_offset_bytes = g.heap_bytes;
    g.heap_bytes += s.signal_bytes;
  }
  for (auto &g : p.groups)
    g.zero_bytes = g.heap_bytes;
  for (auto &s : p.shmems)
    if (!s.zero_data) {
      Group &g = p.groups.at(static_cast<size_t>(s.group_index));
      s.data_offset_bytes = g.heap_bytes;
      g.heap_bytes += s.data_bytes;
    }
  // FNV-1a over what every member must agree on, so PEs running different programs that share
  // a group are caught when their shmem tensors differ.
  for (size_t gi = 0; gi < p.groups.size(); ++gi) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
      for (int b = 0; b < 8; ++b) {
        h ^= (v >> (8 * b)) & 0xff;
        h *= 1099511628211ull;
      }
    };
    mix(static_cast<uint64_t>(p.groups[gi].n_pes));
    for (auto &s : p.shmems) {
      if (s.group_index != static_cast<int>(gi))
        continue;
      mix(static_cast<uint64_t>(s.dtype));
      mix(s.shape.size());
      for (auto d : s.shape)
        mix(static_cast<uint64_t>(d));
      mix(static_cast<uint64_t>(s.data_offset_bytes));
      mix(static_cast<uint64_t>(s.signal_offset_bytes));
      mix(static_cast<uint64_t>(s.signal_bytes));
      mix(s.zero_data ? 1 : 0);
    }
    for (auto &a : p.groups[gi].agreements) {
      // What must agree, not where it was traced: PEs may reach one collective from different
      // lines of the kernel.
      const std::string_view what = std::string_view(a).substr(0, a.find('\t'));
      mix(what.size());
      for (char c : what)
        mix(static_cast<unsigned char>(c));
    }
    p.groups[gi].layout_hash = h;
    p.groups[gi].layout = layout_text(p, static_cast<int>(gi));
  }
}

} // namespace pto::ir
