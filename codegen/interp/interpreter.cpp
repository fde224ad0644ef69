// interpreter.cpp - The reference interpreter (make_interpreter in compile.h): walks an
// ir::Program with scalar C++ semantics and calls the same runtime ABI as generated code. It is
// the oracle for tests and the PTO_RUN_MODE=interpret debug mode, so it favours obviously
// correct loops over speed. The LLVM lowering implements exactly these semantics:
//
// - Storage: params are the caller's contiguous row-major buffers; locals are zero-filled buffers
//   allocated once per call; views alias their root with offsets evaluated at the op; shmem data
//   is only touched through pto_rt_put/get/clear.
// - Every compute op walks the tiles of its output (tile_expand with the op's tile) and, inside a
//   tile, only the valid region; elements outside it are never touched.
// - The shape rules (dsl/src/shape_rules.h) reach the executors as Check ops at the front of
//   their loop body: a failing one calls pto_rt_check_fail, as generated code does. As a second
//   line, before an op touches a view, the touched window (per dim: the clamped valid extent)
//   is checked against the root tensor; outside it the call fails with pto_rt_fail kind 5
//   (ShapeError).
// - fp16/bf16/fp32 compute in float, double in double, ints in int64 wrapped to the dtype; every
//   store rounds to nearest even.
// - No C++ exception escapes for a run-time fault: it is recorded through the ABI and run()
//   returns PTO_ERR. Only ptojit bugs (InternalError) throw.
#include "interp/interpreter.h"

#include "pto/error.h"
#include "pto/ir/printer.h"

#include "passes/compile.h"
#include "passes/pipeline.h"
#include "passes/run_checks.h"
#include "passes/tile_expand.h"
#include "rtlib/run_check.h"
#include "rtlib/xops.h"

#include <cstdint>
#include <new>
#include <string>

namespace pto::codegen {
namespace interp {

namespace {
/// Carries a failed pto_status out of symbol evaluation (SymbolEnv returns plain values).
struct SymFault {
  int32_t status;
};
} // namespace

using ir::Op;
using ir::OpKind;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;

Run::Run(const ir::Program &p, const SiteTable &sites, pto_ctx *ctx, void *const *args,
         const int64_t *dims)
    : p_(p), sites_(sites), ctx_(ctx), args_(args), dims_(dims) {
  int64_t base = 0;
  for (ValueId id : p_.params) {
    dim_base_.push_back(base);
    base += static_cast<int64_t>(p_.value(id).shape.size());
  }
  loop_idx_.assign(static_cast<size_t>(p_.n_loops), 0);
  loop_start_.assign(static_cast<size_t>(p_.n_loops), 0);
  loop_stop_.assign(static_cast<size_t>(p_.n_loops), 0);
  loop_step_.assign(static_cast<size_t>(p_.n_loops), 1);
  local_.resize(p_.values.size());
  local_shape_.resize(p_.values.size());
  allocated_.assign(p_.values.size(), 0);
  env_ = [this](const SymExpr &s) -> int64_t {
    switch (s.sym) {
    case SymKind::InputDim:
      return dims_[dim_base_.at(static_cast<size_t>(s.a)) + s.b];
    case SymKind::LoopIndex:
      return loop_idx_.at(static_cast<size_t>(s.a));
    case SymKind::MyPe:
      return pto_rt_my_pe(ctx_, static_cast<int32_t>(s.a));
    case SymKind::TensorElement:
      break; // elements_ reads them, at evaluated indices
    case SymKind::LoopBegin: {
      auto l = static_cast<size_t>(s.a);
      return loop_idx_.at(l) == loop_start_.at(l);
    }
    case SymKind::LoopEnd: { // the next index would reach stop (or overflow)
      auto l = static_cast<size_t>(s.a);
      int64_t next = 0;
      return __builtin_add_overflow(loop_idx_.at(l), loop_step_.at(l), &next) ||
             next >= loop_stop_.at(l);
    }
    case SymKind::Named:
      break;
    }
    throw InternalError("<interpreter>", "evaluate",
                        "free symbol '" + s.name + "' has no value in a kernel");
  };
  elements_ = [this](const SymExpr &e, const std::vector<int64_t> &idx) -> int64_t {
    int64_t v = 0;
    if (int32_t st = read_element(e, idx, v))
      throw SymFault{st};
    return v;
  };
}

int32_t Run::eval(const SymbolicScalar &s, int64_t &out, bool *overflow) {
  if (s.is_concrete()) {
    out = s.expr().value;
    return PTO_OK;
  }
  try {
    out = evaluate(s, env_, "", elements_, overflow);
  } catch (const RuntimeError &) {
    return fail(PTO_FAIL_DIV_ZERO, 0, 0);
  } catch (const SymFault &f) { // a tensor-element read failed (already recorded)
    return f.status;
  }
  return PTO_OK;
}

int32_t Run::read_element(const SymExpr &e, const std::vector<int64_t> &idx, int64_t &out) {
  const auto id = static_cast<ValueId>(e.a);
  Ref r;
  if (int32_t st = ref(id, r))
    return st;
  if (idx.size() != r.shape.size())
    throw InternalError("<interpreter>", "at", "index count differs from the rank");
  // Out of range: a RuntimeError at the Tensor::at call (the same text as generated code's).
  auto bad = [&](size_t d, bool view, int64_t i, int64_t bound) {
    const int64_t args[2] = {i, bound};
    const auto &names = sites_.names();
    const std::string by =
        site_ >= 0 && size_t(site_) < names.size() ? names[size_t(site_)] : std::string();
    return pto_rt_check_fail(ctx_, sites_.read_site(e.read, site_), PTO_ERROR_RUNTIME,
                             element_index_message(p_, e, d, view, by).c_str(), args, 2);
  };
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] < 0 || idx[d] >= r.shape[d])
      return bad(d, false, idx[d], r.shape[d]);
    if (!r.offsets.empty()) { // a view: the element must also lie in the viewed tensor
      const int64_t pos = r.offsets[d] + idx[d];
      if (pos < 0 || pos >= r.root_shape[d])
        return bad(d, true, pos, r.root_shape[d]);
    }
  }
  out = load_i(r.at(idx), r.dt);
  return PTO_OK;
}

int32_t Run::eval_all(const std::vector<SymbolicScalar> &s, std::vector<int64_t> &out) {
  out.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (int32_t st = eval(s[i], out[i]))
      return st;
  return PTO_OK;
}

int32_t Run::ref(ValueId id, Ref &out) {
  const Value &v = p_.value(id);
  const Value &root = p_.root(id);
  out.dt = v.dtype;
  out.esize = bytes_of(v.dtype);
  if (int32_t st = eval_all(v.shape, out.shape))
    return st;
  switch (root.kind) {
  case ValueKind::Param: {
    out.root = static_cast<uint8_t *>(args_[root.param_index]);
    auto b = dim_base_.at(static_cast<size_t>(root.param_index));
    out.root_shape.assign(dims_ + b, dims_ + b + static_cast<int64_t>(root.shape.size()));
    break;
  }
  case ValueKind::Local: {
    auto r = static_cast<size_t>(root.id);
    if (!allocated_[r])
      if (int32_t st = allocate(root))
        return st;
    out.root = local_[r].data();
    out.root_shape = local_shape_[r];
    break;
  }
  case ValueKind::View:
  case ValueKind::ShmemData:
  case ValueKind::Token:
    throw InternalError("<interpreter>", "interpreter",
                        "value %" + v.name + " has no local storage (rerun with PTO_DUMP=ir)");
  }
  out.strides = row_major(out.root_shape);
  out.offsets.clear();
  out.lin0 = 0;
  if (v.kind == ValueKind::View) {
    if (int32_t st = eval_all(v.offsets, out.offsets))
      return st;
    out.lin0 = dot(out.offsets, out.strides);
  }
  return PTO_OK;
}

int32_t Run::allocate(const Value &root) {
  auto r = static_cast<size_t>(root.id);
  std::vector<int64_t> &shape = local_shape_[r];
  shape.resize(root.shape.size());
  bool over = false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (int32_t st = eval(root.shape[d], shape[d], &over))
      return st;
  // As generated code: a dim that overflowed, or a size past 2^62 bytes, is a ShapeError at the
  // op's line; a negative dim counts as an empty one.
  std::vector<int64_t> dims;
  for (auto d : shape)
    dims.push_back(d < 0 ? 0 : d);
  auto bytes = dense_bytes(dims, bytes_of(root.dtype));
  if (over || !bytes)
    return pto_rt_fail_msg(ctx_, PTO_ERROR_SHAPE, site_, result_size_overflow(root).c_str());
  // Memory the host refuses is a RuntimeError recorded in the context (as pto_rt_alloc), not a
  // C++ exception out of the kernel.
  try {
    local_[r].assign(static_cast<size_t>(*bytes), 0);
  } catch (const std::exception &) { // bad_alloc, or length_error past max_size()
    return pto_rt_fail_msg(ctx_, PTO_ERROR_RUNTIME, site_,
                           ("cannot allocate " + std::to_string(*bytes) +
                            " bytes of scratch memory for a local tensor")
                               .c_str());
  }
  allocated_[r] = 1;
  return PTO_OK;
}

int32_t Run::valid_of(ValueId id, const std::vector<int64_t> &shape, std::vector<int64_t> &out) {
  if (int32_t st = eval_all(p_.value(id).valid, out))
    return st;
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = tile_valid(out[d], 0, shape[d]);
  return PTO_OK;
}

int32_t Run::check_window(const Ref &r, const std::vector<int64_t> &ext) {
  if (r.offsets.empty())
    return PTO_OK;
  for (auto e : ext)
    if (e <= 0)
      return PTO_OK; // nothing is touched
  for (size_t d = 0; d < ext.size(); ++d) {
    if (r.offsets[d] < 0)
      return fail(PTO_FAIL_VIEW_BOUNDS, r.offsets[d], r.root_shape[d]);
    if (r.offsets[d] + ext[d] > r.root_shape[d])
      return fail(PTO_FAIL_VIEW_BOUNDS, r.offsets[d] + ext[d] - 1, r.root_shape[d]);
  }
  return PTO_OK;
}

int32_t Run::exec(const std::vector<Op> &ops) {
  for (const auto &op : ops) {
    site_ = sites_.of(op);
    // Compute ops get a timeline event (the runtime traces shmem calls itself).
    const auto family = ir::op_info(op.kind).family;
    const bool traced = family != ir::OpFamily::Shmem && family != ir::OpFamily::Control &&
                        family != ir::OpFamily::Check;
    const int64_t t0 = traced ? pto_rt_trace_now(ctx_) : -1;
    if (int32_t st = exec_op(op))
      return st;
    if (traced)
      pto_rt_trace_op(ctx_, site_, 1, t0);
  }
  return PTO_OK;
}

// Families of one kind are routed by family alone; a second kind there must be dispatched here.
static_assert(ir::kinds_in(ir::OpFamily::Select) == 1 && ir::kinds_in(ir::OpFamily::Create) == 1 &&
                  ir::kinds_in(ir::OpFamily::Move) == 1 &&
                  ir::kinds_in(ir::OpFamily::Matmul) == 1 && ir::kinds_in(ir::OpFamily::Check) == 1,
              "exec_op routes a family of one kind by its family");

int32_t Run::exec_op(const Op &op) {
  switch (ir::op_info(op.kind).family) {
  case ir::OpFamily::Unary:
    return unary(op);
  case ir::OpFamily::Binary:
    return binary(op);
  case ir::OpFamily::Select:
    return select(op);
  case ir::OpFamily::Reduce:
    return reduce(op);
  case ir::OpFamily::Create:
    return full(op);
  case ir::OpFamily::Move:
    return assemble(op);
  case ir::OpFamily::Matmul:
    return matmul(op);
  case ir::OpFamily::Standalone:
    return standalone(op);
  case ir::OpFamily::Library:
    return library(op);
  case ir::OpFamily::Check:
    return check(op);
  case ir::OpFamily::Shmem:
    switch (ir::kind_as<ir::ShmemKind>(op.kind)) {
    case ir::ShmemKind::ShmemPut:
      return shmem_put(op);
    case ir::ShmemKind::ShmemGet:
      return shmem_get(op);
    case ir::ShmemKind::ShmemSignal:
    case ir::ShmemKind::ShmemWaitUntil:
      return shmem_signal_wait(op);
    case ir::ShmemKind::ShmemClearData:
      return shmem_clear(op);
    case ir::ShmemKind::ShmemClearSignal:
      return shmem_clear_signal(op);
    case ir::ShmemKind::Nop:
      return PTO_OK;
    case ir::ShmemKind::ShmemFence:
      return pto_rt_fence(ctx_, site_);
    case ir::ShmemKind::ShmemQuiet:
      return pto_rt_quiet(ctx_, site_);
    case ir::ShmemKind::ShmemPutSignal:
      return shmem_put_signal(op);
    case ir::ShmemKind::ShmemWaitUntilAll:
    case ir::ShmemKind::ShmemWaitUntilAny:
    case ir::ShmemKind::ShmemWaitUntilSome:
    case ir::ShmemKind::ShmemTest:
      return shmem_wait_set(op);
    case ir::ShmemKind::ShmemAtomicFetchAdd:
    case ir::ShmemKind::ShmemAtomicSwap:
    case ir::ShmemKind::ShmemAtomicCompareSwap:
      return shmem_atomic(op);
    }
    break;
  case ir::OpFamily::Control:
    switch (ir::kind_as<ir::ControlKind>(op.kind)) {
    case ir::ControlKind::Loop:
      return loop(op);
    case ir::ControlKind::Paths:
      return paths(op);
    }
    break;
  }
  throw InternalError(op.where, ir::op_info(op.kind).name,
                      "the interpreter has no case for this op (a ptojit bug)");
}

/// Library ops (xops.h): the same routine as generated code, on the operands' windows.
int32_t Run::library(const Op &op) {
  std::vector<XTensor> ts;
  auto add = [&](ir::ValueId id) -> int32_t {
    Ref r;
    if (int32_t st = ref(id, r))
      return st;
    std::vector<int64_t> valid;
    if (int32_t st = valid_of(id, r.shape, valid))
      return st;
    if (int32_t st = check_window(r, valid))
      return st;
    if (r.shape.size() > static_cast<size_t>(kXMaxRank))
      throw InternalError(op.where, ir::op_info(op.kind).name, "rank above kXMaxRank");
    XTensor t{};
    t.base = r.root + r.lin0 * r.esize;
    t.dtype = static_cast<int64_t>(r.dt);
    t.rank = static_cast<int64_t>(r.shape.size());
    for (size_t d = 0; d < r.shape.size(); ++d) {
      t.shape[d] = r.shape[d];
      t.valid[d] = valid[d];
      t.strides[d] = r.strides[d];
    }
    ts.push_back(t);
    return PTO_OK;
  };
  for (auto id : op.inputs)
    if (int32_t st = add(id))
      return st;
  for (auto id : op.outputs)
    if (int32_t st = add(id))
      return st;
  std::vector<double> reals = op.reals;
  XCall c{};
  c.ctx = ctx_;
  c.site = site_;
  c.kind = static_cast<int64_t>(op.kind);
  c.n_inputs = static_cast<int64_t>(op.inputs.size());
  c.n_tensors = static_cast<int64_t>(ts.size());
  c.tensors = ts.data();
  c.axis = op.axis;
  c.keepdim = op.keepdim;
  c.n_ints = static_cast<int64_t>(op.ints.size());
  c.ints = op.ints.data();
  if (op.scalar) {
    reals.push_back(op.scalar->is_int ? static_cast<double>(op.scalar->i) : op.scalar->f);
    c.has_scalar = 1;
    c.scalar_i = op.scalar->is_int ? op.scalar->i : xop_scalar_int(op.scalar->f);
  }
  c.n_reals = static_cast<int64_t>(reals.size());
  c.reals = reals.data();
  return pto_rt_xop(&c);
}

/// Evaluates the bounds once at entry (a bound whose arithmetic overflows int64 is a
/// RuntimeError, and so is a run-time step <= 0). The index stops before it would pass
/// INT64_MAX, so the trip count is ceil((stop - start) / step), as generated code counts it.
int32_t Run::loop(const Op &op) {
  int64_t b[3] = {0, 0, 0};
  const SymbolicScalar *bound[3] = {&op.start, &op.stop, &op.step};
  const char *which[3] = {"start", "stop", "step"};
  for (int k = 0; k < 3; ++k) {
    bool over = false;
    if (int32_t st = eval(*bound[k], b[k], &over))
      return st;
    if (over)
      return pto_rt_fail_msg(ctx_, PTO_ERROR_RUNTIME, site_,
                             loop_bound_overflow(which[k], *bound[k]).c_str());
  }
  const int64_t start = b[0], stop = b[1], step = b[2];
  if (step <= 0) // concrete steps are > 0 (traced); no iteration runs, no op of the body
    return pto_rt_check_fail(ctx_, site_, PTO_ERROR_RUNTIME, loop_step_message(op.step).c_str(),
                             &step, 1);
  const auto l = static_cast<size_t>(op.loop_id);
  loop_start_.at(l) = start;
  loop_stop_.at(l) = stop;
  loop_step_.at(l) = step;
  const int32_t loop_site = site_;
  for (int64_t i = start; i < stop;) {
    loop_idx_.at(static_cast<size_t>(op.loop_id)) = i;
    if (int32_t st = exec(op.body))
      return st;
    site_ = loop_site;
    if (__builtin_add_overflow(i, step, &i))
      break;
  }
  return PTO_OK;
}

/// A run-time requirement: fails through pto_rt_check_fail, as generated code does.
int32_t Run::check(const Op &op) {
  int64_t holds = 0;
  bool overflow = false;
  if (int32_t st = eval(op.holds, holds, &overflow))
    return st;
  if (overflow)
    return pto_rt_fail_msg(ctx_, check_error_class(op), site_, check_overflow(op.holds).c_str());
  if (holds != 0)
    return PTO_OK;
  std::vector<int64_t> args;
  if (int32_t st = eval_all(op.args, args))
    return st;
  return pto_rt_check_fail(ctx_, site_, check_error_class(op), op.message.c_str(), args.data(),
                           static_cast<int64_t>(args.size()));
}

/// PyPTO path dispatch: every guard is evaluated at body entry, before any path runs (they are
/// disjoint by construction); the first that holds runs.
int32_t Run::paths(const Op &op) {
  const int32_t paths_site = site_;
  for (const auto &path : op.paths) {
    int64_t g = 0;
    site_ = paths_site;
    if (int32_t st = eval(path.guard, g))
      return st;
    if (g != 0)
      return exec(path.body);
  }
  return PTO_OK;
}

} // namespace interp

namespace {

class Interpreter final : public Executable {
public:
  explicit Interpreter(std::shared_ptr<const PlannedProgram> pp)
      : pp_(std::move(pp)), p_(pp_->program) {
    sites_ = pp_->sites.names();
  }

  int32_t run(pto_ctx *ctx, void *const *args, const int64_t *dims) const override {
    std::vector<int64_t> heap;
    std::vector<int32_t> n_pes;
    std::vector<const char *> names;
    bool shmem = !p_.shmems.empty();
    if (shmem) {
      std::vector<uint64_t> hashes;
      std::vector<const char *> where, layout;
      std::vector<int64_t> zero;
      for (const auto &g : p_.groups) {
        zero.push_back(g.zero_bytes);
        hashes.push_back(g.layout_hash);
        where.push_back(g.where.c_str());
        layout.push_back(g.layout.c_str());
        heap.push_back(g.heap_bytes);
        n_pes.push_back(g.n_pes);
        names.push_back(g.name.c_str());
      }
      pto_rt_heap_zeroing(ctx, static_cast<int32_t>(zero.size()), zero.data());
      int32_t st =
          pto_rt_kernel_enter(ctx, hashes.data(), static_cast<int32_t>(p_.groups.size()),
                              heap.data(), n_pes.data(), names.data(), where.data(), layout.data());
      if (st != PTO_OK)
        return st;
    }
    interp::Run r(p_, pp_->sites, ctx, args, dims);
    int32_t st = PTO_OK;
    try {
      st = r.exec(p_.body);
    } catch (const std::bad_alloc &) { // working storage of a huge op (its tile list, buffers)
      return pto_rt_fail_msg(ctx, PTO_ERROR_RUNTIME, r.site(),
                             "out of memory in the reference interpreter");
    }
    if (st != PTO_OK)
      return st;
    return shmem ? pto_rt_kernel_exit(ctx) : PTO_OK;
  }

private:
  std::shared_ptr<const PlannedProgram> pp_;
  const ir::Program &p_;
};

} // namespace

std::shared_ptr<const Executable> make_interpreter(std::shared_ptr<const PlannedProgram> pp) {
  return std::make_shared<Interpreter>(std::move(pp));
}

} // namespace pto::codegen
