// verifier.cpp - Structural invariants of a traced program (see verifier.h).
#include "pto/ir/verifier.h"

#include "pto/error.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace pto::ir {
namespace {

[[noreturn]] void fail(const Op &op, const std::string &what) {
  throw InternalError(op.where, op_info(op.kind).name,
                      "IR verification failed: " + what +
                          " (a ptojit bug; rerun with PTO_DUMP=ir)");
}

[[noreturn]] void fail_value(const Value &v, const std::string &what) {
  throw InternalError("<ir>", "verify",
                      "IR verification failed: value %" + v.name + " " + what +
                          " (a ptojit bug; rerun with PTO_DUMP=ir)");
}

bool is_wait_set(OpKind k) {
  return k == OpKind::ShmemWaitUntilAll || k == OpKind::ShmemWaitUntilAny ||
         k == OpKind::ShmemWaitUntilSome || k == OpKind::ShmemTest;
}

bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

bool same_dims(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](auto &x, auto &y) { return x.same_as(y); });
}

/// Numpy broadcasting of `in` into `out`: right-aligned, each dim equal to out's or 1.
bool broadcasts(const std::vector<SymbolicScalar> &in, const std::vector<SymbolicScalar> &out) {
  if (in.size() > out.size())
    return false;
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (!in[d].same_as(out[d + off]) && !is_one(in[d]))
      return false;
  return true;
}

void check_ids(const Program &p, const Op &op, const std::vector<ValueId> &ids, const char *what) {
  for (auto id : ids)
    if (id < 0 || static_cast<size_t>(id) >= p.values.size())
      fail(op, fmt::format("{} id {} out of range", what, id));
}

void need(const Op &op, size_t ins, size_t outs) {
  if (op.inputs.size() != ins || op.outputs.size() != outs)
    fail(op, fmt::format("expected {} inputs and {} outputs, got {} and {}", ins, outs,
                         op.inputs.size(), op.outputs.size()));
}

/// Elementwise ops (unary, binary, select): the operands share a dtype (select: its two value
/// operands; its condition is DT_BOOL); the result has it, or DT_BOOL (comparisons, predicates),
/// or the cast's target; every operand broadcasts into the result's shape, which has the rank
/// of the widest operand (a tensor-scalar form: the tensor's shape).
void check_elementwise(const Program &p, const Op &op) {
  const Value &out = p.value(op.outputs[0]);
  const bool select = op.kind == OpKind::Where;
  if (select && p.value(op.inputs[0]).dtype != DT_BOOL)
    fail(op, "the condition of a select is " + name(p.value(op.inputs[0]).dtype) + ", not DT_BOOL");
  const DataType dt = p.value(op.inputs[select ? 1 : 0]).dtype;
  size_t rank = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Value &in = p.value(op.inputs[i]);
    if ((!select || i > 0) && in.dtype != dt)
      fail(op, fmt::format("operands of dtypes {} and {}", name(dt), name(in.dtype)));
    if (!broadcasts(in.shape, out.shape))
      fail(op, fmt::format("operand %{} of shape {} does not broadcast to the result shape {}",
                           in.name, str(in.shape), str(out.shape)));
    rank = std::max(rank, in.shape.size());
  }
  if (out.shape.size() != rank)
    fail(op,
         fmt::format("result rank {}, expected {} (the widest operand's)", out.shape.size(), rank));
  if (op.kind == OpKind::Cast && out.dtype != op.to)
    fail(op,
         fmt::format("result dtype {}, but the cast's target is {}", name(out.dtype), name(op.to)));
  if (op.kind != OpKind::Cast && out.dtype != dt && out.dtype != DT_BOOL)
    fail(op, fmt::format("result dtype {} for operands of dtype {}", name(out.dtype), name(dt)));
}

/// Reductions over `axis`: the input's dtype; its shape with dim `axis` set to 1 (keepdim) or
/// removed (a rank-1 input gives shape [1]).
void check_reduce(const Program &p, const Op &op) {
  const Value &in = p.value(op.inputs[0]), &out = p.value(op.outputs[0]);
  const int rank = static_cast<int>(in.shape.size());
  if (op.axis < 0 || op.axis >= rank)
    fail(op, "reduction axis out of range");
  if (out.dtype != in.dtype)
    fail(op,
         fmt::format("result dtype {} for an input of dtype {}", name(out.dtype), name(in.dtype)));
  std::vector<SymbolicScalar> want;
  for (int d = 0; d < rank; ++d)
    if (d != op.axis)
      want.push_back(in.shape[static_cast<size_t>(d)]);
    else if (op.keepdim)
      want.emplace_back(1);
  if (want.empty())
    want.emplace_back(1);
  if (!same_dims(out.shape, want))
    fail(op, fmt::format("result shape {}, expected {} (input {} over axis {}{})", str(out.shape),
                         str(want), str(in.shape), op.axis, op.keepdim ? ", keepdim" : ""));
}

/// Assemble writes its input into a view of the same dtype and shape.
void check_assemble(const Program &p, const Op &op) {
  const Value &in = p.value(op.inputs[0]), &out = p.value(op.outputs[0]);
  if (out.kind != ValueKind::View)
    fail(op, "assemble must write a view");
  if (out.dtype != in.dtype || !same_dims(out.shape, in.shape))
    fail(op, fmt::format("assemble of {} {} into a view of {} {}", name(in.dtype), str(in.shape),
                         name(out.dtype), str(out.shape)));
}

/// Ops that tile expansion splits by their vec tile have one entry > 0 per dim of the space
/// they walk (the result; a reduction's or an assemble's input).
void check_tile(const Program &p, const Op &op) {
  const OpFamily f = op_info(op.kind).family;
  const Value &space =
      f == OpFamily::Reduce || f == OpFamily::Move ? p.value(op.inputs[0]) : p.value(op.outputs[0]);
  if (op.tile.vec.size() < space.shape.size())
    fail(op, fmt::format("a vec tile of {} entries for a space of rank {}", op.tile.vec.size(),
                         space.shape.size()));
  for (size_t d = 0; d < space.shape.size(); ++d)
    if (op.tile.vec[d] <= 0)
      fail(op, fmt::format("vec tile entry {} is {}", d, op.tile.vec[d]));
}

void verify_family(const Program &p, const Op &op) {
  switch (op_info(op.kind).family) {
  case OpFamily::Unary:
    need(op, 1, 1);
    check_elementwise(p, op);
    break;
  case OpFamily::Binary:
    need(op, op.scalar ? 1 : 2, 1);
    check_elementwise(p, op);
    break;
  case OpFamily::Select:
    need(op, 3, 1);
    check_elementwise(p, op);
    break;
  case OpFamily::Reduce:
    need(op, 1, 1);
    check_reduce(p, op);
    break;
  case OpFamily::Create:
    need(op, 0, 1);
    if (!op.scalar)
      fail(op, "a full without its fill value");
    break;
  case OpFamily::Move:
    need(op, 1, 1);
    check_assemble(p, op);
    break;
  case OpFamily::Shmem:
    // Nop, fence and quiet name no shmem tensor; nor does a wait set with no element.
    if (op.kind != OpKind::Nop && op.kind != OpKind::ShmemFence && op.kind != OpKind::ShmemQuiet &&
        !(is_wait_set(op.kind) && op.set_rows.empty()) &&
        (op.shmem < 0 || static_cast<size_t>(op.shmem) >= p.shmems.size()))
      fail(op, "shmem index out of range");
    if (is_wait_set(op.kind) && (op.set_offsets.size() != op.set_rows.size() ||
                                 op.slots.has_value() == op.set_rows.empty()))
      fail(op, "a wait set's elements disagree with its slot geometry");
    if ((op.kind == OpKind::ShmemPutSignal || op.kind == OpKind::ShmemSignal ||
         op.kind == OpKind::ShmemWaitUntil) &&
        !op.slots)
      fail(op, "a signal or wait without its slot geometry");
    if (op.outputs.empty() || p.value(op.outputs[0]).kind != ValueKind::Token)
      fail(op, "a shmem op's first output must be a token");
    break;
  case OpFamily::Matmul:
    if ((op.inputs.size() != 2 && op.inputs.size() != 3) || op.outputs.size() != 1)
      fail(op, fmt::format("expected 2 or 3 inputs and 1 output, got {} and {}", op.inputs.size(),
                           op.outputs.size()));
    if (op.tile.cube.size() != 7)
      fail(op, "matmul without a cube tile");
    break;
  case OpFamily::Standalone:
    if (op.outputs.size() != 1)
      fail(op, fmt::format("expected 1 output, got {}", op.outputs.size()));
    if (op.kind == OpKind::Permute && op.perm.size() != p.value(op.outputs[0]).shape.size())
      fail(op, "permutation rank differs from the output rank");
    break;
  case OpFamily::Library:
    if (op.outputs.empty())
      fail(op, "a library op needs at least one output");
    break;
  case OpFamily::Check:
    need(op, 0, 0);
    if (op.label.empty())
      fail(op, "a check without the op it checks");
    break;
  case OpFamily::Control:
    if (op.kind == OpKind::Loop && (!op.paths.empty() || op.loop_id < 0))
      fail(op, "a loop has paths or no loop id");
    if (op.kind == OpKind::Paths && (op.paths.empty() || !op.body.empty()))
      fail(op, "a paths op needs paths and no body");
    break;
  }
}

bool tiled(const Op &op) {
  switch (op_info(op.kind).family) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Select:
  case OpFamily::Reduce:
  case OpFamily::Create:
  case OpFamily::Move:
    return true;
  case OpFamily::Shmem:
  case OpFamily::Control:
  case OpFamily::Matmul:
  case OpFamily::Standalone:
  case OpFamily::Library:
  case OpFamily::Check:
    return false;
  }
  return false;
}

bool computes(const Op &op) {
  switch (op_info(op.kind).family) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Select:
  case OpFamily::Reduce:
  case OpFamily::Matmul:
  case OpFamily::Standalone:
  case OpFamily::Library:
    return true;
  case OpFamily::Create:
  case OpFamily::Move:
  case OpFamily::Shmem:
  case OpFamily::Control:
  case OpFamily::Check:
    return false;
  }
  return false;
}

void verify_op(const Program &p, const Op &op) {
  check_ids(p, op, op.inputs, "input");
  check_ids(p, op, op.preds, "pred");
  check_ids(p, op, op.outputs, "output");
  verify_family(p, op);
  if (tiled(op))
    check_tile(p, op);
  if (computes(op))
    for (auto id : op.inputs) {
      const Value &v = p.value(id);
      if (v.kind == ValueKind::Token || v.shmem >= 0)
        fail(op, "compute op reads a token or shmem data");
    }
}

/// Verifies `ops`, a region nested in regions whose values are `visible` (trace regions,
/// Value::region): the region's own values are those its ops output, and every value an op
/// reads, waits on or writes must be the region's or an enclosing one's (a value made inside a
/// loop body, or on one path, is not used after the loop or on another path).
void verify_region(const Program &p, const std::vector<Op> &ops, std::set<int> visible) {
  for (const Op &op : ops) {
    check_ids(p, op, op.outputs, "output");
    for (ValueId id : op.outputs)
      visible.insert(p.value(id).region);
  }
  for (const Op &op : ops) {
    verify_op(p, op);
    for (const auto *ids : {&op.inputs, &op.preds, &op.outputs})
      for (ValueId id : *ids)
        if (!visible.count(p.value(id).region))
          fail(op, fmt::format("value %{} of trace region {} is used outside that region",
                               p.value(id).name, p.value(id).region));
    verify_region(p, op.body, visible);
    for (auto &path : op.paths)
      verify_region(p, path.body, visible);
  }
}

void verify_value(const Program &p, const Value &v) {
  if (v.valid.size() != v.shape.size())
    fail_value(v, "has a valid shape of another rank");
  if (v.kind == ValueKind::View) {
    if (v.base < 0 || static_cast<size_t>(v.base) >= p.values.size() ||
        p.value(v.base).kind == ValueKind::View)
      fail_value(v, "must view a non-view value");
    const Value &base = p.value(v.base);
    if (v.offsets.size() != v.shape.size() || base.shape.size() != v.shape.size())
      fail_value(v, fmt::format("of rank {} has {} offsets into %{} of rank {}", v.shape.size(),
                                v.offsets.size(), base.name, base.shape.size()));
    if (v.dtype != base.dtype)
      fail_value(v, "of dtype " + name(v.dtype) + " views %" + base.name + " of dtype " +
                        name(base.dtype));
  }
  if (v.kind == ValueKind::Param &&
      (v.param_index < 0 || static_cast<size_t>(v.param_index) >= p.params.size() ||
       p.params[static_cast<size_t>(v.param_index)] != v.id))
    fail_value(v,
               fmt::format("is parameter {} but not in the parameter list there", v.param_index));
}

} // namespace

void verify(const Program &p) {
  for (auto &v : p.values)
    verify_value(p, v);
  verify_region(p, p.body, {0});
}

} // namespace pto::ir
