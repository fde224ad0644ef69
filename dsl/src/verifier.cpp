// verifier.cpp - Structural invariants of a traced program (see verifier.h).
#include "pto/ir/verifier.h"

#include "pto/error.h"

#include <fmt/format.h>

namespace pto::ir {
namespace {

[[noreturn]] void fail(const Op &op, const std::string &what) {
  throw InternalError(op.where, op_info(op.kind).name,
                      "IR verification failed: " + what + " (a ptojit bug; rerun with PTO_DUMP=ir)");
}

void check_ids(const Program &p, const Op &op, const std::vector<ValueId> &ids, const char *what) {
  for (auto id : ids)
    if (id < 0 || static_cast<size_t>(id) >= p.values.size())
      fail(op, fmt::format("{} id {} out of range", what, id));
}

void verify_op(const Program &p, const Op &op) {
  check_ids(p, op, op.inputs, "input");
  check_ids(p, op, op.preds, "pred");
  check_ids(p, op, op.outputs, "output");
  auto family = op_info(op.kind).family;
  auto need = [&](size_t ins, size_t outs) {
    if (op.inputs.size() != ins || op.outputs.size() != outs)
      fail(op, fmt::format("expected {} inputs and {} outputs, got {} and {}", ins, outs,
                           op.inputs.size(), op.outputs.size()));
  };
  switch (family) {
  case OpFamily::Unary: need(1, 1); break;
  case OpFamily::Binary: need(op.scalar ? 1 : 2, 1); break;
  case OpFamily::Select: need(3, 1); break;
  case OpFamily::Reduce:
    need(1, 1);
    if (op.axis < 0 || op.axis >= static_cast<int>(p.value(op.inputs[0]).shape.size()))
      fail(op, "reduction axis out of range");
    break;
  case OpFamily::Create: need(0, 1); break;
  case OpFamily::Move:
    need(1, 1);
    if (p.value(op.outputs[0]).kind != ValueKind::View)
      fail(op, "assemble must write a view");
    break;
  case OpFamily::Shmem:
    if (op.kind != OpKind::Nop && (op.shmem < 0 || static_cast<size_t>(op.shmem) >= p.shmems.size()))
      fail(op, "shmem index out of range");
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
    need(0, 0);
    if (op.label.empty())
      fail(op, "a check without the op it checks");
    break;
  case OpFamily::Control:
    if (op.kind == OpKind::Loop && (!op.paths.empty() || op.loop_id < 0))
      fail(op, "a loop has paths or no loop id");
    if (op.kind == OpKind::Paths && (op.paths.empty() || !op.body.empty()))
      fail(op, "a paths op needs paths and no body");
    for (auto &b : op.body)
      verify_op(p, b);
    for (auto &path : op.paths)
      for (auto &b : path.body)
        verify_op(p, b);
    break;
  }
  if (family == OpFamily::Unary || family == OpFamily::Binary || family == OpFamily::Select ||
      family == OpFamily::Reduce || family == OpFamily::Matmul ||
      family == OpFamily::Standalone || family == OpFamily::Library) {
    for (auto id : op.inputs) {
      const Value &v = p.value(id);
      if (v.kind == ValueKind::Token || v.shmem >= 0)
        fail(op, "compute op reads a token or shmem data");
    }
  }
}

} // namespace

void verify(const Program &p) {
  for (auto &v : p.values) {
    if (v.valid.size() != v.shape.size())
      throw InternalError("<ir>", "verify", "value %" + v.name + " has a valid shape of another rank");
    if (v.kind == ValueKind::View) {
      if (v.base < 0 || p.value(v.base).kind == ValueKind::View)
        throw InternalError("<ir>", "verify", "view %" + v.name + " must view a non-view value");
      if (v.offsets.size() != v.shape.size())
        throw InternalError("<ir>", "verify", "view %" + v.name + " offsets rank mismatch");
    }
  }
  for (auto &op : p.body)
    verify_op(p, op);
}

} // namespace pto::ir
