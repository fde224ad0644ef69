// program.cpp - Per-kind op facts, value roots, strides and the symmetric-heap layout.
#include "pto/ir/program.h"

#include <array>

namespace pto::ir {

const OpInfo &op_info(OpKind k) {
  static const std::array<OpInfo, 26> table{{
      {"neg", OpFamily::Unary},
      {"abs", OpFamily::Unary},
      {"exp", OpFamily::Unary},
      {"log", OpFamily::Unary},
      {"sqrt", OpFamily::Unary},
      {"rsqrt", OpFamily::Unary},
      {"reciprocal", OpFamily::Unary},
      {"cast", OpFamily::Unary},
      {"add", OpFamily::Binary},
      {"sub", OpFamily::Binary},
      {"mul", OpFamily::Binary},
      {"div", OpFamily::Binary},
      {"maximum", OpFamily::Binary},
      {"minimum", OpFamily::Binary},
      {"sum", OpFamily::Reduce},
      {"amax", OpFamily::Reduce},
      {"amin", OpFamily::Reduce},
      {"full", OpFamily::Create},
      {"assemble", OpFamily::Move},
      {"shmem_put", OpFamily::Shmem},
      {"shmem_get", OpFamily::Shmem},
      {"shmem_signal", OpFamily::Shmem},
      {"shmem_wait_until", OpFamily::Shmem},
      {"shmem_clear_data", OpFamily::Shmem},
      {"nop", OpFamily::Shmem},
      {"loop", OpFamily::Control},
  }};
  static_assert(static_cast<size_t>(OpKind::Loop) == 25, "op_info table out of date");
  return table.at(static_cast<size_t>(k));
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

void layout_shmem(Program &p) {
  auto round512 = [](int64_t b) { return (b + 511) / 512 * 512; };
  for (auto &g : p.groups)
    g.heap_bytes = 0;
  for (auto &s : p.shmems) {
    Group &g = p.groups.at(static_cast<size_t>(s.group_index));
    int64_t numel = 1;
    for (auto d : s.shape)
      numel *= d;
    s.data_bytes = s.shape.empty() ? 0 : round512(numel * bytes_of(s.dtype));
    s.signal_bytes = round512(int64_t{s.n_pes} * 8 * s.max_tile_num * 4);
    s.data_offset_bytes = g.heap_bytes;
    g.heap_bytes += s.data_bytes;
    s.signal_offset_bytes = g.heap_bytes;
    g.heap_bytes += s.signal_bytes;
  }
}

} // namespace pto::ir
