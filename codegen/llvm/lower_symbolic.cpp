// lower_symbolic.cpp - KernelBuilder's evaluator of symbolic scalars (pto/symbolic.h) as i64
// code: run-time dims, loop indices, my_pe, tensor-element reads, and the arithmetic, compares and
// logic over them with the folder's semantics (wrapping +, -, *; x / -1 a negation; division by
// zero fails the call), evaluated as the interpreter does.
#include "pto/error.h"

#include "llvm/dtype_codec.h"
#include "llvm/kernel_builder.h"
#include "passes/run_checks.h"

#include <llvm/IR/Intrinsics.h>

#include <unordered_map>

namespace pto::codegen {

using ir::ValueId;
using ir::ValueKind;
using LV = llvm::Value;

void KernelBuilder::bind_loop(int64_t loop_id, LV *start, LV *stop, LV *step) {
  loop_bounds_[loop_id] = LoopBounds{start, stop, step};
}

/// A run-time symbol; `idx` holds a tensor element's evaluated indices.
LV *KernelBuilder::symbol_value(const SymExpr &e, const std::vector<LV *> &idx) {
  switch (e.sym) {
  case SymKind::LoopIndex:
    return loop_index_.at(e.a);
  case SymKind::InputDim: {
    int64_t off = 0;
    for (int64_t q = 0; q < e.a; ++q)
      off += static_cast<int64_t>(p_.value(p_.params[static_cast<size_t>(q)]).shape.size());
    return B.CreateLoad(B.getInt64Ty(), B.CreateConstGEP1_64(B.getInt64Ty(), dims_,
                                                             static_cast<uint64_t>(off + e.b)));
  }
  case SymKind::MyPe:
    return my_pe_.at(e.a);
  case SymKind::TensorElement:
    return read_element(e, idx);
  case SymKind::LoopBegin: {
    const LoopBounds &lb = loop_bounds_.at(e.a);
    return B.CreateZExt(B.CreateICmpEQ(loop_index_.at(e.a), lb.start), B.getInt64Ty());
  }
  case SymKind::LoopEnd: { // the next index reaches stop, or overflows
    const LoopBounds &lb = loop_bounds_.at(e.a);
    LV *next =
        B.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_with_overflow, loop_index_.at(e.a), lb.step);
    LV *last = B.CreateOr(B.CreateExtractValue(next, 1),
                          B.CreateICmpSGE(B.CreateExtractValue(next, 0), lb.stop));
    return B.CreateZExt(last, B.getInt64Ty());
  }
  case SymKind::Named:
    break;
  }
  throw InternalError("<codegen>", "lower_llvm",
                      "free symbol '" + e.name + "' cannot be compiled; rerun with PTO_DUMP=ir");
}

/// `op(a...)` on i64 operands (no short-circuit: every operand is evaluated).
LV *KernelBuilder::sym_op(SymOp op, const std::vector<LV *> &a) {
  auto b01 = [&](LV *c) { return B.CreateZExt(c, B.getInt64Ty()); };
  auto nz = [&](LV *v) { return B.CreateICmpNE(v, i64(0)); };
  switch (op) {
  case SymOp::Add:
    return arith(llvm::Intrinsic::sadd_with_overflow, a[0], a[1]);
  case SymOp::Sub:
    return arith(llvm::Intrinsic::ssub_with_overflow, a[0], a[1]);
  case SymOp::Mul:
    return arith(llvm::Intrinsic::smul_with_overflow, a[0], a[1]);
  case SymOp::Div:
  case SymOp::Mod: {
    fail_unless(nz(a[1]), PTO_FAIL_DIV_ZERO, a[0], a[1]);
    // x / -1 as a negation keeps INT64_MIN / -1 defined (wraps, as the folder does).
    LV *minus1 = B.CreateICmpEQ(a[1], i64(-1));
    if (overflow_ && op == SymOp::Div)
      note_overflow(B.CreateAnd(minus1, B.CreateICmpEQ(a[0], i64(INT64_MIN))));
    LV *safe = B.CreateSelect(minus1, i64(1), a[1]);
    if (op == SymOp::Div)
      return B.CreateSelect(minus1, B.CreateNeg(a[0]), B.CreateSDiv(a[0], safe));
    return B.CreateSelect(minus1, i64(0), B.CreateSRem(a[0], safe));
  }
  case SymOp::Min:
    return smin(a[0], a[1]);
  case SymOp::Max:
    return smax(a[0], a[1]);
  case SymOp::Eq:
    return b01(B.CreateICmpEQ(a[0], a[1]));
  case SymOp::Ne:
    return b01(B.CreateICmpNE(a[0], a[1]));
  case SymOp::Lt:
    return b01(B.CreateICmpSLT(a[0], a[1]));
  case SymOp::Le:
    return b01(B.CreateICmpSLE(a[0], a[1]));
  case SymOp::Gt:
    return b01(B.CreateICmpSGT(a[0], a[1]));
  case SymOp::Ge:
    return b01(B.CreateICmpSGE(a[0], a[1]));
  case SymOp::And:
    return b01(B.CreateAnd(nz(a[0]), nz(a[1])));
  case SymOp::Or:
    return b01(B.CreateOr(nz(a[0]), nz(a[1])));
  case SymOp::Neg:
    return arith(llvm::Intrinsic::ssub_with_overflow, i64(0), a[0]);
  case SymOp::Not:
    return b01(B.CreateICmpEQ(a[0], i64(0)));
  case SymOp::Select:
    return B.CreateSelect(nz(a[0]), a[1], a[2]);
  }
  return i64(0);
}

/// `a op b` wrapping, as the folder does; while sym_checked runs, its overflow bit is noted.
LV *KernelBuilder::arith(llvm::Intrinsic::ID id, LV *a, LV *b) {
  if (!overflow_) {
    switch (id) {
    case llvm::Intrinsic::sadd_with_overflow:
      return B.CreateAdd(a, b);
    case llvm::Intrinsic::ssub_with_overflow:
      return B.CreateSub(a, b);
    default:
      return B.CreateMul(a, b);
    }
  }
  LV *r = B.CreateBinaryIntrinsic(id, a, b);
  note_overflow(B.CreateExtractValue(r, 1));
  return B.CreateExtractValue(r, 0);
}
/// ORs `bit` into sym_checked's flag. The flag lives in memory (volatile), not in a chain of
/// SSA `or`s: a chain would not dominate the code after a short-circuit branch of sym(), and
/// LLVM's jump threading recurses once per link (a 30000-term bound overflowed its stack).
void KernelBuilder::note_overflow(LV *bit) {
  LV *old = B.CreateLoad(B.getInt1Ty(), overflow_, /*isVolatile=*/true);
  B.CreateStore(B.CreateOr(old, bit), overflow_, /*isVolatile=*/true);
}

/// sym(s), plus an i1 in `over` that is true when any +, -, *, unary - or / of s overflowed
/// int64 (as evaluate(..., &overflow) in the interpreter).
LV *KernelBuilder::sym_checked(const SymbolicScalar &s, LV *&over) {
  if (!overflow_slot_)
    overflow_slot_ = entry_alloca(B.getInt1Ty(), "sym_overflow");
  B.CreateStore(B.getFalse(), overflow_slot_, /*isVolatile=*/true);
  LV *saved = overflow_;
  overflow_ = overflow_slot_;
  LV *v = sym(s);
  overflow_ = saved;
  over = B.CreateLoad(B.getInt1Ty(), overflow_slot_, /*isVolatile=*/true);
  return v;
}
/// Emits one symbolic expression as an i64. A stack machine (no recursion, so expressions of any
/// depth are fine): each frame is a node and its stage, operand values wait on `vals_`. A shared
/// subexpression is emitted once per branch scope (`memo_`: a value emitted inside a
/// short-circuit branch does not dominate the code after it). `&`, `|` and ternary evaluate only
/// the operands that decide the result when the others could fail (a tensor-element read, a
/// division), as the interpreter does.
class SymEmitter {
public:
  SymEmitter(KernelBuilder &kb, const SymbolicScalar &s)
      : kb_(kb), B(kb.builder()), root_(s.expr()), memo_(1) {
    for_each_node(s, [&](const SymExpr &e) {
      bool f = (e.tag == SymExpr::Tag::Symbol && e.sym == SymKind::TensorElement) ||
               (e.tag == SymExpr::Tag::Op && (e.op == SymOp::Div || e.op == SymOp::Mod) &&
                e.args[1]->tag != SymExpr::Tag::Const);
      for (auto &a : e.args)
        f = f || faults_.at(a.get());
      faults_[&e] = f;
    });
  }

  LV *run() {
    stack_.push_back(Frame{&root_});
    while (!stack_.empty())
      step(stack_.back());
    return vals_.back();
  }

private:
  struct Frame {
    const SymExpr *e;
    int stage = 0;
    llvm::BasicBlock *from = nullptr, *join = nullptr, *other = nullptr;
    LV *first = nullptr;
  };

  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const SymExpr &root_;
  std::unordered_map<const SymExpr *, bool> faults_; // can evaluating the node fail?
  std::vector<Frame> stack_;
  std::vector<LV *> vals_;
  std::vector<std::unordered_map<const SymExpr *, LV *>> memo_; ///< one map per branch scope

  /// Advances the frame on top by one stage. `f` is only touched before the next push.
  void step(Frame &f) {
    const SymExpr &e = *f.e;
    const int stage = f.stage++;
    if (stage == 0)
      if (LV *v = find(&e)) {
        stack_.pop_back();
        vals_.push_back(v);
        return;
      }
    const auto n_args = static_cast<int>(e.args.size());
    if (e.tag == SymExpr::Tag::Const) {
      done(kb_.i64(e.value));
    } else if (e.tag == SymExpr::Tag::Symbol) {
      if (stage < n_args)
        push(e.args[static_cast<size_t>(stage)]);
      else
        done(kb_.symbol_value(e, pop_n(e.args.size())));
    } else if ((e.op == SymOp::And || e.op == SymOp::Or) && faults_.at(e.args[1].get())) {
      short_circuit(f, stage);
    } else if (e.op == SymOp::Select &&
               (faults_.at(e.args[1].get()) || faults_.at(e.args[2].get()))) {
      select(f, stage);
    } else if (stage < n_args) {
      push(e.args[static_cast<size_t>(stage)]);
    } else {
      done(kb_.sym_op(e.op, pop_n(e.args.size())));
    }
  }

  /// `l && r` / `l || r` evaluating r only when l does not decide.
  void short_circuit(Frame &f, int stage) {
    const SymExpr &e = *f.e;
    if (stage == 0) {
      push(e.args[0]);
    } else if (stage == 1) {
      LV *l = nz(pop());
      auto *rhs = kb_.block("sc.rhs");
      f.join = kb_.block("sc.join");
      f.from = B.GetInsertBlock();
      if (e.op == SymOp::And)
        B.CreateCondBr(l, rhs, f.join);
      else
        B.CreateCondBr(l, f.join, rhs);
      branch_to(rhs);
      push(e.args[1]);
    } else {
      LV *r = nz(pop());
      memo_.pop_back();
      LV *phi = kb_.join_phi(f.join, B.getInt1(e.op == SymOp::Or), f.from, r);
      done(B.CreateZExt(phi, B.getInt64Ty()));
    }
  }

  /// `c ? a : b` evaluating only the chosen operand.
  void select(Frame &f, int stage) {
    const SymExpr &e = *f.e;
    if (stage == 0) {
      push(e.args[0]);
    } else if (stage == 1) {
      LV *c = nz(pop());
      auto *yes = kb_.block("sel.t");
      f.other = kb_.block("sel.f");
      f.join = kb_.block("sel.join");
      B.CreateCondBr(c, yes, f.other);
      branch_to(yes);
      push(e.args[1]);
    } else if (stage == 2) {
      f.first = pop();
      memo_.pop_back();
      f.from = B.GetInsertBlock();
      B.CreateBr(f.join);
      branch_to(f.other);
      push(e.args[2]);
    } else {
      LV *b = pop();
      memo_.pop_back();
      done(kb_.join_phi(f.join, f.first, f.from, b));
    }
  }

  LV *find(const SymExpr *e) const {
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
      if (auto m = it->find(e); m != it->end())
        return m->second;
    return nullptr;
  }
  LV *pop() {
    LV *v = vals_.back();
    vals_.pop_back();
    return v;
  }
  std::vector<LV *> pop_n(size_t n) {
    std::vector<LV *> v(vals_.end() - static_cast<long>(n), vals_.end());
    vals_.resize(vals_.size() - n);
    return v;
  }
  /// `v` is the value of the frame on top.
  void done(LV *v) {
    memo_.back()[stack_.back().e] = v;
    stack_.pop_back();
    vals_.push_back(v);
  }
  void push(const std::shared_ptr<const SymExpr> &p) { stack_.push_back(Frame{p.get()}); }
  LV *nz(LV *v) { return B.CreateICmpNE(v, kb_.i64(0)); }
  /// Enters a branch: a new memo scope.
  void branch_to(llvm::BasicBlock *bb) {
    B.SetInsertPoint(bb);
    memo_.emplace_back();
  }
};

LV *KernelBuilder::sym(const SymbolicScalar &s) {
  const SymExpr &root = s.expr();
  if (root.tag == SymExpr::Tag::Const)
    return i64(root.value);
  if (root.tag == SymExpr::Tag::Symbol && root.args.empty())
    return symbol_value(root, {});
  return SymEmitter(*this, s).run();
}

/// Tensor::at: the element of value `e.a` at indices `idx` (evaluated `e.args`), widened to
/// i64 (bool: 0/1). Each index is checked against the value's dim (and, through a view, the
/// viewed tensor's) before the load: out of range fails the call (kind 2) at the current site.
LV *KernelBuilder::read_element(const SymExpr &e, const std::vector<LV *> &idx) {
  const ir::Value &v = p_.value(static_cast<ValueId>(e.a));
  const ir::Value &root = p_.root(v.id);
  std::vector<LV *> pos;
  // Out of range: a RuntimeError at the Tensor::at call (the same text as the interpreter's).
  const int site = sites_.read_site(e.read, cur_site_);
  const auto &names = sites_.names();
  const std::string by =
      cur_site_ >= 0 && size_t(cur_site_) < names.size() ? names[size_t(cur_site_)] : std::string();
  for (size_t d = 0; d < e.args.size(); ++d) {
    LV *i = idx[d];
    LV *dim = sym(v.shape[d]);
    check_fail_unless(B.CreateICmpULT(i, dim), site, PTO_ERROR_RUNTIME,
                      element_index_message(p_, e, d, false, by), {i, dim});
    if (v.kind == ValueKind::View) {
      LV *at = B.CreateAdd(sym(v.offsets[d]), i);
      LV *root_dim = sym(root.shape[d]);
      check_fail_unless(B.CreateICmpULT(at, root_dim), site, PTO_ERROR_RUNTIME,
                        element_index_message(p_, e, d, true, by), {at, root_dim});
      i = at;
    }
    pos.push_back(i);
  }
  LV *base = base_of(root);
  std::vector<LV *> strides = strides_of(root.shape);
  LV *lin = i64(0);
  for (size_t d = 0; d < pos.size(); ++d)
    lin = B.CreateAdd(lin, B.CreateMul(pos[d], strides[d]));
  llvm::Type *st = storage_type(B, v.dtype);
  LV *x = B.CreateLoad(st, B.CreateGEP(st, base, lin));
  if (v.dtype == DT_BOOL)
    return B.CreateZExt(B.CreateICmpNE(x, llvm::ConstantInt::get(st, 0)), B.getInt64Ty());
  return to_i64(B, x, v.dtype);
}

} // namespace pto::codegen
