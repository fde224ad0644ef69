// interpreter_shmem.cpp - The reference interpreter's distributed ops: puts, gets, signals,
// waits and clears, each split per vec tile into runtime ABI calls (reference §6.3, §6.5); and
// the rest of the OpenSHMEM model: fence, quiet, put-with-signal, wait sets, test, AMOs.
#include "interp/interpreter.h"
#include "passes/slots.h"
#include "passes/tile_expand.h"
#include "rtlib/abi_codes.h"

namespace pto::codegen::interp {

using ir::Op;
using ir::OpKind;

namespace {

/// pto_block extents/strides for a box of rank <= 4, padded with leading unit dims.
pto_block make_block(const std::vector<int64_t> &ext, const std::vector<int64_t> &src_strides,
                     const std::vector<int64_t> &dst_strides) {
  pto_block b{};
  size_t r = ext.size(), pad = 4 - r;
  for (size_t i = 0; i < 4; ++i) {
    b.extent[i] = i < pad ? 1 : ext[i - pad];
    b.src_stride[i] = i < pad ? 0 : src_strides[i - pad];
    b.dst_stride[i] = i < pad ? 0 : dst_strides[i - pad];
  }
  return b;
}

/// Calls move(ext, tile_offset, data_strides, byte_offset) for every tile of the view of `op`
/// into shmem tensor `s` whose extents within `valid` are non-empty: ext the tile's valid
/// extents, tile_offset its offset in the view, byte_offset where it starts in the data (the
/// window at `offs` was checked to lie inside it). Stops at the first status that is not PTO_OK.
template <class Move>
int32_t for_each_view_tile(const ir::ShmemInfo &s, const Op &op, const std::vector<int64_t> &valid,
                           const std::vector<int64_t> &offs, Move move) {
  const auto data_strides = row_major(s.shape);
  const int64_t esize = bytes_of(s.dtype);
  const size_t r = op.view_shape.size();
  for (const auto &t : tile_expand(op.view_shape, op.tile.vec)) {
    std::vector<int64_t> ext(r), at(r);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      ext[d] = tile_valid(valid[d], t.offset[d], t.size[d]);
      empty = empty || ext[d] == 0;
    }
    if (empty)
      continue;
    for (size_t d = 0; d < r; ++d)
      at[d] = offs[d] + t.offset[d]; // inside the data: the whole window was checked
    if (int32_t st =
            move(ext, t.offset, data_strides, s.data_offset_bytes + dot(at, data_strides) * esize))
      return st;
  }
  return PTO_OK;
}

} // namespace

// The window [offs, offs + shape) must lie inside `data` in every dim (checked once per op, as
// generated code does); fails with the first offending index: the window's last index, or the
// offset itself when it is past the data (so that a huge offset cannot wrap the end).
int32_t Run::check_shmem_window(const std::vector<int64_t> &data, const std::vector<int64_t> &offs,
                                const std::vector<int64_t> &shape) {
  for (size_t d = 0; d < offs.size(); ++d) {
    if (offs[d] < 0)
      return fail(PTO_FAIL_OFFSET, offs[d], data[d]);
    if (offs[d] > data[d] - shape[d]) // no overflow: 0 <= shape, data <= 2^62
      return fail(PTO_FAIL_OFFSET, offs[d] <= data[d] ? offs[d] + shape[d] - 1 : offs[d], data[d]);
  }
  return PTO_OK;
}

int32_t Run::shmem_target(const Op &op, const ir::ShmemInfo &s, int64_t &pe,
                          std::vector<int64_t> &offs) {
  if (int32_t st = eval(op.pe, pe))
    return st;
  if (pe < 0 || pe >= s.n_pes)
    return fail(PTO_FAIL_PE, pe, s.n_pes);
  if (int32_t st = eval_all(op.view_offsets, offs))
    return st;
  return check_shmem_window(s.shape, offs, op.view_shape);
}

int32_t Run::shmem_put(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  Ref src;
  if (int32_t st = ref(op.inputs[0], src))
    return st;
  std::vector<int64_t> sv, offs;
  if (int32_t st = valid_of(op.inputs[0], src.shape, sv))
    return st;
  if (int32_t st = check_window(src, sv))
    return st;
  int64_t pe = 0;
  if (int32_t st = shmem_target(op, s, pe, offs))
    return st;
  return for_each_view_tile(
      s, op, sv, offs,
      [&](const auto &ext, const auto &at_tile, const auto &data_strides, int64_t byte_offset) {
        pto_block b = make_block(ext, src.strides, data_strides);
        return pto_rt_put(ctx_, s.group_index, static_cast<int32_t>(pe), abi_atomic(op.atomic),
                          src.at(at_tile), src.dt, byte_offset, s.data_offset_bytes + s.data_bytes,
                          s.dtype, &b, site_);
      });
}

int32_t Run::shmem_get(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  Ref dst;
  if (int32_t st = ref(op.outputs.at(1), dst))
    return st;
  std::vector<int64_t> vv, offs;
  if (int32_t st = eval_all(op.view_valid, vv))
    return st;
  int64_t pe = 0;
  if (int32_t st = shmem_target(op, s, pe, offs))
    return st;
  return for_each_view_tile(
      s, op, vv, offs,
      [&](const auto &ext, const auto &at_tile, const auto &data_strides, int64_t byte_offset) {
        pto_block b = make_block(ext, data_strides, dst.strides);
        return pto_rt_get(ctx_, s.group_index, static_cast<int32_t>(pe), byte_offset,
                          s.data_offset_bytes + s.data_bytes, s.dtype, dst.at(at_tile), dst.dt, &b,
                          site_);
      });
}

int32_t Run::shmem_signal_wait(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  const ir::SlotGeometry &g = ir::slots_of(op);
  std::vector<int64_t> o;
  int64_t row = 0, target = -1;
  if (int32_t st = check_slots(s, g, g.view_offsets, op.pe, o, row))
    return st;
  if (op.kind == OpKind::ShmemSignal && !op.target_all) {
    if (int32_t st = eval(op.target_pe, target))
      return st;
    if (target < 0 || target >= s.n_pes)
      return fail(PTO_FAIL_PE, target, s.n_pes);
  }
  for (const auto &t : tile_expand(g.view_shape, g.tile)) {
    const int64_t slot = slot_number(g, o, t.offset, row);
    const int64_t off = s.signal_offset_bytes + slot * 8 * 4;
    int32_t st;
    if (op.kind == OpKind::ShmemSignal)
      st = pto_rt_signal(ctx_, s.group_index, static_cast<int32_t>(target), off,
                         abi_atomic(op.atomic), op.signal, site_);
    else
      st = pto_rt_wait_until(ctx_, s.group_index, off, abi_cmp(op.cmp), op.signal, op.clear ? 1 : 0,
                             slot, site_);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

int32_t Run::shmem_clear(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  std::vector<int64_t> offs;
  if (int32_t st = eval_all(op.view_offsets, offs))
    return st;
  if (int32_t st = check_shmem_window(s.shape, offs, op.view_shape))
    return st;
  const auto data_strides = row_major(s.shape);
  pto_block b = make_block(op.view_shape, data_strides, data_strides);
  return pto_rt_clear(ctx_, s.group_index,
                      s.data_offset_bytes + dot(offs, data_strides) * bytes_of(s.dtype),
                      s.data_offset_bytes + s.data_bytes, s.dtype, &b, site_);
}

int32_t Run::shmem_clear_signal(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  pto_block b = make_block({s.signal_bytes / 4}, {1}, {1});
  return pto_rt_clear(ctx_, s.group_index, s.signal_offset_bytes,
                      s.signal_offset_bytes + s.signal_bytes, DT_INT32, &b, site_);
}

int32_t Run::check_slots(const ir::ShmemInfo &s, const ir::SlotGeometry &g,
                         const std::vector<SymbolicScalar> &offs_sym, const SymbolicScalar &row_sym,
                         std::vector<int64_t> &offs, int64_t &row) {
  if (int32_t st = eval_all(offs_sym, offs))
    return st;
  if (int32_t st = check_shmem_window(g.data_shape, offs, g.view_shape))
    return st;
  if (int32_t st = eval(row_sym, row))
    return st;
  if (row < 0 || row >= s.n_pes)
    return fail(PTO_FAIL_PE, row, s.n_pes);
  for (size_t d = 0; d < offs.size(); ++d)
    if ((offs[d] % g.view_shape[d]) % g.tile[d] != 0)
      return fail(PTO_FAIL_SLOT_ALIGN, offs[d] % g.view_shape[d], g.tile[d]);
  return PTO_OK;
}

// Per tile of the window: the tile's data (when any of it is valid), then its slot, in one
// runtime call (pto_rt_put_signal), as generated code does.
int32_t Run::shmem_put_signal(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  const ir::SlotGeometry &g = ir::slots_of(op);
  Ref src;
  if (int32_t st = ref(op.inputs[0], src))
    return st;
  std::vector<int64_t> sv, offs, o;
  if (int32_t st = valid_of(op.inputs[0], src.shape, sv))
    return st;
  if (int32_t st = check_window(src, sv))
    return st;
  int64_t pe = 0, row = 0;
  if (int32_t st = shmem_target(op, s, pe, offs))
    return st;
  if (int32_t st = check_slots(s, g, g.view_offsets, op.target_pe, o, row))
    return st;
  const auto data_strides = row_major(s.shape);
  const int64_t esize = bytes_of(s.dtype);
  const size_t r = op.view_shape.size();
  for (const auto &t : tile_expand(op.view_shape, op.tile.vec)) {
    const int64_t slot_off = s.signal_offset_bytes + slot_number(g, o, t.offset, row) * 8 * 4;
    std::vector<int64_t> ext(r), at(r);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      ext[d] = tile_valid(sv[d], t.offset[d], t.size[d]);
      empty = empty || ext[d] == 0;
      at[d] = offs[d] + t.offset[d];
    }
    int32_t st;
    if (empty) {
      st = pto_rt_signal(ctx_, s.group_index, static_cast<int32_t>(pe), slot_off,
                         abi_atomic(op.sig_atomic), op.signal, site_);
    } else {
      pto_block b = make_block(ext, src.strides, data_strides);
      st = pto_rt_put_signal(ctx_, s.group_index, static_cast<int32_t>(pe), abi_atomic(op.atomic),
                             src.at(t.offset), src.dt,
                             s.data_offset_bytes + dot(at, data_strides) * esize,
                             s.data_offset_bytes + s.data_bytes, s.dtype, &b, slot_off,
                             abi_atomic(op.sig_atomic), op.signal, site_);
    }
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

int32_t Run::shmem_wait_set(const Op &op) {
  const size_t n = op.set_rows.size();
  std::vector<int64_t> slot_offsets;
  int32_t group = 0, per_elem = 1;
  int64_t base = 0;
  if (n > 0) {
    const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
    const ir::SlotGeometry &g = ir::slots_of(op);
    const auto tiles = tile_expand(g.view_shape, g.tile);
    group = s.group_index;
    base = s.signal_offset_bytes;
    per_elem = static_cast<int32_t>(tiles.size());
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> o;
      int64_t row = 0;
      if (int32_t st = check_slots(s, g, op.set_offsets[i], op.set_rows[i], o, row))
        return st;
      for (const auto &t : tiles)
        slot_offsets.push_back(base + slot_number(g, o, t.offset, row) * 8 * 4);
    }
  }
  const int32_t *status = nullptr;
  int64_t status_stride = 0, status_valid = 0;
  if (!op.inputs.empty()) {
    Ref st_ref;
    std::vector<int64_t> valid;
    if (int32_t st = ref(op.inputs[0], st_ref))
      return st;
    if (int32_t st = valid_of(op.inputs[0], st_ref.shape, valid))
      return st;
    if (int32_t st = check_window(st_ref, valid))
      return st;
    status = reinterpret_cast<const int32_t *>(st_ref.at(std::vector<int64_t>(valid.size(), 0)));
    status_stride = st_ref.strides.back();
    status_valid = valid.back();
    for (size_t d = 0; d + 1 < valid.size(); ++d)
      status_valid = valid[d] == 0 ? 0 : status_valid; // nothing valid: every element included
  }
  int32_t *out = nullptr, *count = nullptr;
  int64_t out_stride = 0;
  auto int32_at = [&](ir::ValueId id, int32_t *&p, int64_t *stride) -> int32_t {
    Ref r;
    if (int32_t st = ref(id, r))
      return st;
    p = reinterpret_cast<int32_t *>(r.at(std::vector<int64_t>(r.shape.size(), 0)));
    if (stride) {
      *stride = r.strides.back();
      for (int64_t i = 0; i < r.shape.back(); ++i)
        p[i * *stride] = -1; // entries past the count
    }
    return PTO_OK;
  };
  // ShmemWaitUntilAll has a token only.
  if (op.kind == OpKind::ShmemWaitUntilAny) {
    if (int32_t st = int32_at(op.outputs.at(1), out, nullptr))
      return st;
  } else if (op.kind == OpKind::ShmemWaitUntilSome) {
    if (int32_t st = int32_at(op.outputs.at(1), out, &out_stride))
      return st;
    if (int32_t st = int32_at(op.outputs.at(2), count, nullptr))
      return st;
  } else if (op.kind == OpKind::ShmemTest) {
    if (int32_t st = int32_at(op.outputs.at(1), count, nullptr))
      return st;
  }
  return pto_rt_wait_until_set(ctx_, group, abi_wait_mode(op.kind), abi_wait_blocks(op),
                               slot_offsets.data(), static_cast<int32_t>(n), per_elem, base, status,
                               status_stride, status_valid, abi_cmp(op.cmp), op.signal,
                               op.clear ? 1 : 0, out, out_stride, count, site_);
}

int32_t Run::shmem_atomic(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  int64_t pe = 0, offset = 0, limit = 0;
  std::vector<int64_t> offs;
  const DataType dt = op.slots ? DT_INT32 : s.dtype;
  if (op.slots) { // a signal word: the slot of the window's one tile
    int64_t row = 0;
    if (int32_t st = check_slots(s, *op.slots, op.set_offsets.at(0), op.set_rows.at(0), offs, row))
      return st;
    if (int32_t st = eval(op.pe, pe))
      return st;
    if (pe < 0 || pe >= s.n_pes)
      return fail(PTO_FAIL_PE, pe, s.n_pes);
    offset = s.signal_offset_bytes +
             slot_number(*op.slots, offs, std::vector<int64_t>(offs.size(), 0), row) * 8 * 4;
    limit = s.signal_offset_bytes + s.signal_bytes;
  } else {
    if (int32_t st = shmem_target(op, s, pe, offs))
      return st;
    offset = s.data_offset_bytes +
             dot(offs, row_major(s.shape)) * static_cast<int64_t>(bytes_of(s.dtype));
    limit = s.data_offset_bytes + s.data_bytes;
  }
  // The operands as elements of the word's dtype (an int64 is wide enough for each).
  uint8_t value[8] = {}, cond[8] = {};
  if (op.amo_is_real) {
    store_f(value, dt, op.amo_real);
  } else {
    int64_t v = 0;
    if (int32_t st = eval(op.amo_value, v))
      return st;
    store_i(value, dt, v);
  }
  if (op.kind == OpKind::ShmemAtomicCompareSwap) {
    int64_t c = 0;
    if (int32_t st = eval(op.amo_cond, c))
      return st;
    store_i(cond, dt, c);
  }
  Ref old;
  if (int32_t st = ref(op.outputs.at(1), old))
    return st;
  return pto_rt_atomic(ctx_, s.group_index, static_cast<int32_t>(pe), abi_amo(op.kind), dt, offset,
                       limit, value, cond, old.at({0, 0}), op.slots ? 1 : 0, site_);
}

} // namespace pto::codegen::interp
