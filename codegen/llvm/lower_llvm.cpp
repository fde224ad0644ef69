// lower_llvm.cpp - Lowers a traced program to one LLVM function
//   i32 @pto_kernel(ptr ctx, ptr args, ptr dims)
// Fused groups (fuse.h) become tile loops with explicit <W x T> vector passes over each row;
// shmem ops become runtime calls per tile; pto::loop becomes an LLVM loop. Run-time faults call
// pto_rt_fail and return its status (no exception crosses generated code).
#include "llvm/llvm_loops.h"
#include "llvm/lower_llvm.h"

#include "passes/fuse.h"
#include "llvm/jit_engine.h"
#include "llvm/lower_elementwise.h"
#include "llvm/lower_matmul.h"
#include "llvm/lower_standalone.h"
#include "passes/run_checks.h"
#include "rtlib/xops.h"
#include "passes/tile_expand.h"
#include "pto/error.h"
#include "pto/half.h"
#include "pto/ir/printer.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <chrono>
#include <functional>
#include <map>
#include <unordered_map>

namespace pto::codegen {

using ir::Op;
using ir::OpFamily;
using ir::OpKind;
using ir::ValueId;
using ir::ValueKind;

namespace {

using llvm::IRBuilder;
using llvm::Type;
using LV = llvm::Value;

constexpr int kFailDivZero = 1, kFailIndex = 2, kFailPe = 3, kFailOffset = 4, kFailViewBounds = 5,
              kFailSlotAlign = 6;

bool is_unsigned(DataType dt) { return dt == DT_UINT8 || dt == DT_BOOL; }

class Lowering {
public:
  Lowering(const ir::Program &p, const CompileOptions &opts, llvm::LLVMContext &c, llvm::Module &m)
      : p_(p), opts_(opts), C(c), M(m), B(c), W(opts.vector_lanes) {}

  llvm::Function *run() {
    plan_ = plan_fusion(p_);
    number_sites(p_.body);
    auto *i32 = B.getInt32Ty();
    auto *ptr = B.getPtrTy();
    auto *fty = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
    F = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "pto_kernel", M);
    HostTarget &ht = host_target();
    F->addFnAttr("target-cpu", ht.cpu);
    F->addFnAttr("target-features", ht.features);
    F->addFnAttr(llvm::Attribute::NoUnwind);
    ctx_ = F->getArg(0);
    args_ = F->getArg(1);
    dims_ = F->getArg(2);
    entry_ = llvm::BasicBlock::Create(C, "entry", F);
    auto *body = llvm::BasicBlock::Create(C, "body", F);
    B.SetInsertPoint(entry_);
    alloca_point_ = B.CreateBr(body);
    B.SetInsertPoint(body);
    emit_entry();
    emit_region(p_.body);
    if (!p_.shmems.empty()) {
      LV *st = call_rt("pto_rt_kernel_exit", i32, {ctx_});
      B.CreateRet(st);
    } else {
      B.CreateRet(B.getInt32(0));
    }
    return F;
  }

private:
  const ir::Program &p_;
  const CompileOptions &opts_;
  llvm::LLVMContext &C;
  llvm::Module &M;
  IRBuilder<> B;
  int W;
  llvm::Function *F = nullptr;
  LV *ctx_ = nullptr, *args_ = nullptr, *dims_ = nullptr;
  llvm::BasicBlock *entry_ = nullptr;
  llvm::Instruction *alloca_point_ = nullptr;
  FusionPlan plan_;
  std::map<const Op *, int> site_;
  std::map<int64_t, LV *> loop_index_;
  struct LoopBounds {
    LV *start = nullptr, *stop = nullptr, *step = nullptr; ///< as evaluated at loop entry
  };
  std::map<int64_t, LoopBounds> loop_bounds_;
  std::map<int64_t, LV *> my_pe_;
  std::map<ValueId, LV *> storage_; // materialized locals
  std::map<std::pair<int, ValueId>, LV *> scratch_;
  std::map<ValueId, int> def_site_; // the site of the first op that outputs each value
  LV *overflow_ = nullptr;          // sym_checked's i1 flag slot (an entry-block alloca)
  int cur_site_ = 0;

  // ---- helpers -------------------------------------------------------------------------------
  void number_sites(const std::vector<Op> &ops) {
    for (auto &op : ops) {
      site_[&op] = static_cast<int>(site_.size());
      for (ValueId id : op.outputs)
        def_site_.try_emplace(id, site_[&op]);
      number_sites(op.body);
      for (auto &path : op.paths)
        number_sites(path.body);
    }
  }

  LV *call_rt(const char *name, Type *ret, std::vector<LV *> args) {
    std::vector<Type *> tys;
    for (auto *a : args)
      tys.push_back(a->getType());
    auto callee = M.getOrInsertFunction(name, llvm::FunctionType::get(ret, tys, false));
    return B.CreateCall(callee, args);
  }

  /// Returns `status` from the kernel when it is non-zero.
  void ret_if_error(LV *status) {
    auto *bad = llvm::BasicBlock::Create(C, "rt_err", F);
    auto *ok = llvm::BasicBlock::Create(C, "rt_ok", F);
    B.CreateCondBr(B.CreateICmpNE(status, B.getInt32(0)), bad, ok, unlikely());
    B.SetInsertPoint(bad);
    B.CreateRet(status);
    B.SetInsertPoint(ok);
  }
  /// Calls pto_rt_fail(kind, site, a, b) and returns when `ok` is false.
  void fail_unless(LV *ok, int kind, LV *a, LV *b) {
    auto *bad = llvm::BasicBlock::Create(C, "fail", F);
    auto *cont = llvm::BasicBlock::Create(C, "cont", F);
    B.CreateCondBr(ok, cont, bad, likely());
    B.SetInsertPoint(bad);
    LV *st = call_rt("pto_rt_fail", B.getInt32Ty(),
                     {ctx_, B.getInt32(kind), B.getInt32(cur_site_), a, b});
    B.CreateRet(st);
    B.SetInsertPoint(cont);
  }
  /// A run-time requirement (OpKind::Check): unless `holds`, pass the evaluated `args` to
  /// pto_rt_check_fail (the interpreter's failure path too) and return its status.
  void emit_check(const Op &op) {
    auto *bad = llvm::BasicBlock::Create(C, "check.fail", F);
    auto *cont = llvm::BasicBlock::Create(C, "check.ok", F);
    // A condition whose arithmetic overflows is a failure of its own (as in the interpreter):
    // a wrapped offset could land back in range.
    LV *over = nullptr;
    LV *holds = B.CreateICmpNE(sym_checked(op.holds, over), i64(0));
    if (!op.holds.is_concrete())
      fail_msg_if(over, PTO_ERROR_SHAPE, cur_site_, check_overflow(op.holds));
    B.CreateCondBr(holds, cont, bad, likely());
    B.SetInsertPoint(bad);
    const uint64_t n = op.args.size();
    auto *arr_ty = llvm::ArrayType::get(B.getInt64Ty(), n == 0 ? 1 : n);
    LV *arr = entry_alloca(arr_ty, "check_args");
    for (uint64_t k = 0; k < n; ++k)
      B.CreateStore(sym(op.args[k]), B.CreateConstGEP2_64(arr_ty, arr, 0, k));
    LV *st = call_rt("pto_rt_check_fail", B.getInt32Ty(),
                     {ctx_, B.getInt32(cur_site_), B.CreateGlobalStringPtr(op.message),
                      B.CreateConstGEP2_64(arr_ty, arr, 0, 0), i64(static_cast<int64_t>(n))});
    B.CreateRet(st);
    B.SetInsertPoint(cont);
  }
  llvm::MDNode *likely() { return llvm::MDBuilder(C).createBranchWeights(1000, 1); }
  llvm::MDNode *unlikely() { return llvm::MDBuilder(C).createBranchWeights(1, 1000); }

  LV *entry_alloca(Type *t, const char *name) {
    IRBuilder<> eb(alloca_point_);
    return eb.CreateAlloca(t, nullptr, name);
  }

  /// for (i = start; i < end; i += step) body(i)
  void for_loop(LV *start, LV *end, LV *step, const std::function<void(LV *)> &body,
                const char *name = "i") {
    emit_for_loop(B, F, start, end, step, body, name);
  }
  LV *i64(int64_t v) { return B.getInt64(static_cast<uint64_t>(v)); }
  LV *smin(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSLT(a, b), a, b); }
  LV *smax(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSGT(a, b), a, b); }

  // ---- symbolic scalars ----------------------------------------------------------------------
  /// A run-time symbol; `idx` holds a tensor element's evaluated indices.
  LV *symbol_value(const SymExpr &e, const std::vector<LV *> &idx) {
    switch (e.sym) {
    case SymKind::LoopIndex: return loop_index_.at(e.a);
    case SymKind::InputDim: {
      int64_t off = 0;
      for (int64_t q = 0; q < e.a; ++q)
        off += static_cast<int64_t>(p_.value(p_.params[static_cast<size_t>(q)]).shape.size());
      return B.CreateLoad(B.getInt64Ty(), B.CreateConstGEP1_64(B.getInt64Ty(), dims_,
                                                               static_cast<uint64_t>(off + e.b)));
    }
    case SymKind::MyPe: return my_pe_.at(e.a);
    case SymKind::TensorElement: return read_element(e, idx);
    case SymKind::LoopBegin: {
      const LoopBounds &lb = loop_bounds_.at(e.a);
      return B.CreateZExt(B.CreateICmpEQ(loop_index_.at(e.a), lb.start), B.getInt64Ty());
    }
    case SymKind::LoopEnd: { // the next index reaches stop, or overflows
      const LoopBounds &lb = loop_bounds_.at(e.a);
      LV *next = B.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_with_overflow, loop_index_.at(e.a),
                                         lb.step);
      LV *last = B.CreateOr(B.CreateExtractValue(next, 1),
                            B.CreateICmpSGE(B.CreateExtractValue(next, 0), lb.stop));
      return B.CreateZExt(last, B.getInt64Ty());
    }
    case SymKind::Named: break;
    }
    throw InternalError("<codegen>", "lower_llvm",
                        "free symbol '" + e.name + "' cannot be compiled; rerun with PTO_DUMP=ir");
  }

  /// `op(a...)` on i64 operands (no short-circuit: every operand is evaluated).
  LV *sym_op(SymOp op, const std::vector<LV *> &a) {
    auto b01 = [&](LV *c) { return B.CreateZExt(c, B.getInt64Ty()); };
    auto nz = [&](LV *v) { return B.CreateICmpNE(v, i64(0)); };
    switch (op) {
    case SymOp::Add: return arith(llvm::Intrinsic::sadd_with_overflow, a[0], a[1]);
    case SymOp::Sub: return arith(llvm::Intrinsic::ssub_with_overflow, a[0], a[1]);
    case SymOp::Mul: return arith(llvm::Intrinsic::smul_with_overflow, a[0], a[1]);
    case SymOp::Div:
    case SymOp::Mod: {
      fail_unless(nz(a[1]), kFailDivZero, a[0], a[1]);
      // x / -1 as a negation keeps INT64_MIN / -1 defined (wraps, as the folder does).
      LV *minus1 = B.CreateICmpEQ(a[1], i64(-1));
      if (overflow_ && op == SymOp::Div)
        note_overflow(B.CreateAnd(minus1, B.CreateICmpEQ(a[0], i64(INT64_MIN))));
      LV *safe = B.CreateSelect(minus1, i64(1), a[1]);
      if (op == SymOp::Div)
        return B.CreateSelect(minus1, B.CreateNeg(a[0]), B.CreateSDiv(a[0], safe));
      return B.CreateSelect(minus1, i64(0), B.CreateSRem(a[0], safe));
    }
    case SymOp::Min: return smin(a[0], a[1]);
    case SymOp::Max: return smax(a[0], a[1]);
    case SymOp::Eq: return b01(B.CreateICmpEQ(a[0], a[1]));
    case SymOp::Ne: return b01(B.CreateICmpNE(a[0], a[1]));
    case SymOp::Lt: return b01(B.CreateICmpSLT(a[0], a[1]));
    case SymOp::Le: return b01(B.CreateICmpSLE(a[0], a[1]));
    case SymOp::Gt: return b01(B.CreateICmpSGT(a[0], a[1]));
    case SymOp::Ge: return b01(B.CreateICmpSGE(a[0], a[1]));
    case SymOp::And: return b01(B.CreateAnd(nz(a[0]), nz(a[1])));
    case SymOp::Or: return b01(B.CreateOr(nz(a[0]), nz(a[1])));
    case SymOp::Neg: return arith(llvm::Intrinsic::ssub_with_overflow, i64(0), a[0]);
    case SymOp::Not: return b01(B.CreateICmpEQ(a[0], i64(0)));
    case SymOp::Select: return B.CreateSelect(nz(a[0]), a[1], a[2]);
    }
    return i64(0);
  }

  /// `a op b` wrapping, as the folder does; while sym_checked runs, its overflow bit is noted.
  LV *arith(llvm::Intrinsic::ID id, LV *a, LV *b) {
    if (!overflow_) {
      switch (id) {
      case llvm::Intrinsic::sadd_with_overflow: return B.CreateAdd(a, b);
      case llvm::Intrinsic::ssub_with_overflow: return B.CreateSub(a, b);
      default: return B.CreateMul(a, b);
      }
    }
    LV *r = B.CreateBinaryIntrinsic(id, a, b);
    note_overflow(B.CreateExtractValue(r, 1));
    return B.CreateExtractValue(r, 0);
  }
  /// ORs `bit` into sym_checked's flag. The flag lives in memory (volatile), not in a chain of
  /// SSA `or`s: a chain would not dominate the code after a short-circuit branch of sym(), and
  /// LLVM's jump threading recurses once per link (a 30000-term bound overflowed its stack).
  void note_overflow(LV *bit) {
    LV *old = B.CreateLoad(B.getInt1Ty(), overflow_, /*isVolatile=*/true);
    B.CreateStore(B.CreateOr(old, bit), overflow_, /*isVolatile=*/true);
  }

  /// sym(s), plus an i1 in `over` that is true when any +, -, *, unary - or / of s overflowed
  /// int64 (as evaluate(..., &overflow) in the interpreter).
  LV *sym_checked(const SymbolicScalar &s, LV *&over) {
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
  LV *overflow_slot_ = nullptr;

  /// Calls pto_rt_fail_msg(error_class, site, detail) and returns when `bad` is true.
  void fail_msg_if(LV *bad, int32_t error_class, int site, const std::string &detail) {
    auto *fail = llvm::BasicBlock::Create(C, "fail", F);
    auto *cont = llvm::BasicBlock::Create(C, "cont", F);
    B.CreateCondBr(bad, fail, cont, unlikely());
    B.SetInsertPoint(fail);
    B.CreateRet(call_rt("pto_rt_fail_msg", B.getInt32Ty(),
                        {ctx_, B.getInt32(error_class), B.getInt32(site),
                         B.CreateGlobalStringPtr(detail)}));
    B.SetInsertPoint(cont);
  }

  /// Emits `s` as an i64. A stack machine (no recursion, so expressions of any depth are fine):
  /// each frame is a node and its stage, operand values wait on `vals`. A shared subexpression
  /// is emitted once per branch scope (`memo`: a value emitted inside a short-circuit branch
  /// does not dominate the code after it). `&`, `|` and ternary evaluate only the operands that
  /// decide the result when the others could fail (a tensor-element read, a division), as the
  /// interpreter does.
  LV *sym(const SymbolicScalar &s) {
    const SymExpr &root = s.expr();
    if (root.tag == SymExpr::Tag::Const)
      return i64(root.value);
    if (root.tag == SymExpr::Tag::Symbol && root.args.empty())
      return symbol_value(root, {});
    std::unordered_map<const SymExpr *, bool> faults; // can evaluating the node fail?
    for_each_node(s, [&](const SymExpr &e) {
      bool f = (e.tag == SymExpr::Tag::Symbol && e.sym == SymKind::TensorElement) ||
               (e.tag == SymExpr::Tag::Op && (e.op == SymOp::Div || e.op == SymOp::Mod) &&
                e.args[1]->tag != SymExpr::Tag::Const);
      for (auto &a : e.args)
        f = f || faults.at(a.get());
      faults[&e] = f;
    });
    struct Frame {
      const SymExpr *e;
      int stage = 0;
      llvm::BasicBlock *from = nullptr, *join = nullptr, *other = nullptr;
      LV *first = nullptr;
    };
    std::vector<Frame> st{Frame{&root}};
    std::vector<LV *> vals;
    std::vector<std::unordered_map<const SymExpr *, LV *>> memo(1);
    auto find = [&](const SymExpr *e) -> LV * {
      for (auto it = memo.rbegin(); it != memo.rend(); ++it)
        if (auto m = it->find(e); m != it->end())
          return m->second;
      return nullptr;
    };
    auto pop = [&] {
      LV *v = vals.back();
      vals.pop_back();
      return v;
    };
    auto pop_n = [&](size_t n) {
      std::vector<LV *> v(vals.end() - static_cast<long>(n), vals.end());
      vals.resize(vals.size() - n);
      return v;
    };
    auto done = [&](LV *v) { // the value of the frame on top
      memo.back()[st.back().e] = v;
      st.pop_back();
      vals.push_back(v);
    };
    auto push = [&](const std::shared_ptr<const SymExpr> &p) { st.push_back(Frame{p.get()}); };
    auto nz = [&](LV *v) { return B.CreateICmpNE(v, i64(0)); };
    auto branch_to = [&](llvm::BasicBlock *bb) { // enter a branch: a new memo scope
      B.SetInsertPoint(bb);
      memo.emplace_back();
    };
    while (!st.empty()) {
      Frame &f = st.back(); // only touched before the next push
      const SymExpr &e = *f.e;
      const int stage = f.stage++;
      if (stage == 0)
        if (LV *v = find(&e)) {
          st.pop_back();
          vals.push_back(v);
          continue;
        }
      const auto n_args = static_cast<int>(e.args.size());
      if (e.tag == SymExpr::Tag::Const) {
        done(i64(e.value));
      } else if (e.tag == SymExpr::Tag::Symbol) {
        if (stage < n_args)
          push(e.args[static_cast<size_t>(stage)]);
        else
          done(symbol_value(e, pop_n(e.args.size())));
      } else if ((e.op == SymOp::And || e.op == SymOp::Or) && faults.at(e.args[1].get())) {
        if (stage == 0) {
          push(e.args[0]);
        } else if (stage == 1) {
          LV *l = nz(pop());
          auto *rhs = llvm::BasicBlock::Create(C, "sc.rhs", F);
          f.join = llvm::BasicBlock::Create(C, "sc.join", F);
          f.from = B.GetInsertBlock();
          if (e.op == SymOp::And)
            B.CreateCondBr(l, rhs, f.join);
          else
            B.CreateCondBr(l, f.join, rhs);
          branch_to(rhs);
          push(e.args[1]);
        } else {
          LV *r = nz(pop());
          memo.pop_back();
          auto *rhs_end = B.GetInsertBlock();
          B.CreateBr(f.join);
          B.SetInsertPoint(f.join);
          auto *phi = B.CreatePHI(B.getInt1Ty(), 2);
          phi->addIncoming(B.getInt1(e.op == SymOp::Or), f.from);
          phi->addIncoming(r, rhs_end);
          done(B.CreateZExt(phi, B.getInt64Ty()));
        }
      } else if (e.op == SymOp::Select &&
                 (faults.at(e.args[1].get()) || faults.at(e.args[2].get()))) {
        if (stage == 0) {
          push(e.args[0]);
        } else if (stage == 1) {
          LV *c = nz(pop());
          auto *yes = llvm::BasicBlock::Create(C, "sel.t", F);
          f.other = llvm::BasicBlock::Create(C, "sel.f", F);
          f.join = llvm::BasicBlock::Create(C, "sel.join", F);
          B.CreateCondBr(c, yes, f.other);
          branch_to(yes);
          push(e.args[1]);
        } else if (stage == 2) {
          f.first = pop();
          memo.pop_back();
          f.from = B.GetInsertBlock();
          B.CreateBr(f.join);
          branch_to(f.other);
          push(e.args[2]);
        } else {
          LV *b = pop();
          memo.pop_back();
          auto *no_end = B.GetInsertBlock();
          B.CreateBr(f.join);
          B.SetInsertPoint(f.join);
          auto *phi = B.CreatePHI(B.getInt64Ty(), 2);
          phi->addIncoming(f.first, f.from);
          phi->addIncoming(b, no_end);
          done(phi);
        }
      } else if (stage < n_args) {
        push(e.args[static_cast<size_t>(stage)]);
      } else {
        done(sym_op(e.op, pop_n(e.args.size())));
      }
    }
    return vals.back();
  }

  /// Tensor::at: the element of value `e.a` at indices `idx` (evaluated `e.args`), widened to
  /// i64 (bool: 0/1). Each index is checked against the value's dim (and, through a view, the
  /// viewed tensor's) before the load: out of range fails the call (kind 2) at the current site.
  LV *read_element(const SymExpr &e, const std::vector<LV *> &idx) {
    const ir::Value &v = p_.value(static_cast<ValueId>(e.a));
    const ir::Value &root = p_.root(v.id);
    std::vector<LV *> pos;
    for (size_t d = 0; d < e.args.size(); ++d) {
      LV *i = idx[d];
      LV *dim = sym(v.shape[d]);
      fail_unless(B.CreateICmpULT(i, dim), kFailIndex, i, dim);
      if (v.kind == ValueKind::View) {
        LV *at = B.CreateAdd(sym(v.offsets[d]), i);
        LV *root_dim = sym(root.shape[d]);
        fail_unless(B.CreateICmpULT(at, root_dim), kFailIndex, at, root_dim);
        i = at;
      }
      pos.push_back(i);
    }
    LV *base = nullptr;
    if (root.kind == ValueKind::Param) {
      base =
          B.CreateLoad(B.getPtrTy(), B.CreateConstGEP1_64(B.getPtrTy(), args_,
                                                          static_cast<uint64_t>(root.param_index)));
    } else if (auto it = storage_.find(root.id); it != storage_.end()) {
      base = it->second;
    } else {
      throw InternalError("<codegen>", "lower_llvm",
                          "element read of %" + root.name +
                              ", which has no storage; rerun with PTO_DUMP=ir");
    }
    std::vector<LV *> strides = strides_of(root.shape);
    LV *lin = i64(0);
    for (size_t d = 0; d < pos.size(); ++d)
      lin = B.CreateAdd(lin, B.CreateMul(pos[d], strides[d]));
    Type *st = storage_elem(v.dtype);
    LV *x = B.CreateLoad(st, B.CreateGEP(st, base, lin));
    if (v.dtype == DT_BOOL)
      return B.CreateZExt(B.CreateICmpNE(x, llvm::ConstantInt::get(st, 0)), B.getInt64Ty());
    return B.CreateIntCast(x, B.getInt64Ty(), !is_unsigned(v.dtype));
  }

  // ---- storage -------------------------------------------------------------------------------
  struct Addr {
    LV *base = nullptr;             ///< element 0 of the window
    std::vector<LV *> strides;      ///< elements
    DataType dtype = DT_FP32;
  };

  Type *storage_elem(DataType dt) {
    switch (dt) {
    case DT_FP16:
    case DT_BF16:
    case DT_INT16: return B.getInt16Ty();
    case DT_FP32: return B.getFloatTy();
    case DT_DOUBLE: return B.getDoubleTy();
    case DT_INT32: return B.getInt32Ty();
    case DT_INT64: return B.getInt64Ty();
    default: return B.getInt8Ty();
    }
  }
  Type *compute_elem(DataType dt) {
    switch (dt) {
    case DT_FP16:
    case DT_BF16:
    case DT_FP32: return B.getFloatTy();
    default: return storage_elem(dt);
    }
  }
  bool is_fp(DataType dt) { return is_float(dt); }

  std::vector<LV *> strides_of(const std::vector<SymbolicScalar> &shape) {
    std::vector<LV *> s(shape.size());
    LV *acc = i64(1);
    for (size_t d = shape.size(); d-- > 0;) {
      s[d] = acc;
      if (d > 0)
        acc = B.CreateMul(acc, sym(shape[d]));
    }
    return s;
  }

  /// Address of a value's window (views resolved to their root; offsets checked when symbolic).
  Addr addr(ValueId id) {
    const ir::Value &v = p_.value(id);
    Addr a;
    a.dtype = v.dtype;
    const ir::Value &root = v.kind == ValueKind::View ? p_.value(v.base) : v;
    LV *base = nullptr;
    if (root.kind == ValueKind::Param) {
      base = B.CreateLoad(B.getPtrTy(),
                          B.CreateConstGEP1_64(B.getPtrTy(), args_,
                                               static_cast<uint64_t>(root.param_index)));
    } else if (root.kind == ValueKind::Local) {
      auto it = storage_.find(root.id);
      if (it == storage_.end())
        throw InternalError("<codegen>", "lower_llvm",
                            "local %" + root.name + " has no storage; rerun with PTO_DUMP=ir");
      base = it->second;
    } else {
      throw InternalError("<codegen>", "lower_llvm",
                          "value %" + root.name + " is not addressable memory");
    }
    a.strides = strides_of(root.shape);
    if (v.kind == ValueKind::View) {
      LV *lin = i64(0);
      for (size_t d = 0; d < v.offsets.size(); ++d) {
        LV *off = sym(v.offsets[d]);
        LV *valid = sym(v.valid[d]);
        if (!v.offsets[d].is_concrete() || !v.valid[d].is_concrete() ||
            !root.shape[d].is_concrete()) {
          // The window's valid part must lie inside the root (checked once per op, not per
          // element): valid <= 0, or 0 <= off and off + valid <= dim.
          LV *in = B.CreateAnd(B.CreateICmpSGE(off, i64(0)),
                               B.CreateICmpSLE(B.CreateAdd(off, valid), sym(root.shape[d])));
          // The message names an index of the window outside the dim (as the interpreter): the
          // first when the window starts before 0, else the last.
          LV *bad = B.CreateSelect(B.CreateICmpSLT(off, i64(0)), off,
                                   B.CreateSub(B.CreateAdd(off, valid), i64(1)));
          fail_unless(B.CreateOr(B.CreateICmpSLE(valid, i64(0)), in), kFailViewBounds, bad,
                      sym(root.shape[d]));
        }
        lin = B.CreateAdd(lin, B.CreateMul(off, a.strides[d]));
      }
      base = B.CreateGEP(storage_elem(v.dtype), base, lin);
    }
    a.base = base;
    return a;
  }

  void emit_entry() {
    for (size_t g = 0; g < p_.groups.size(); ++g) {
      my_pe_[static_cast<int64_t>(g)] =
          B.CreateSExt(call_rt("pto_rt_my_pe", B.getInt32Ty(), {ctx_, B.getInt32(static_cast<int>(g))}),
                       B.getInt64Ty());
    }
    if (!p_.shmems.empty()) {
      size_t ng = p_.groups.size();
      auto *heap_ty = llvm::ArrayType::get(B.getInt64Ty(), ng);
      auto *npes_ty = llvm::ArrayType::get(B.getInt32Ty(), ng);
      auto *names_ty = llvm::ArrayType::get(B.getPtrTy(), ng);
      LV *hashes = entry_alloca(heap_ty, "group_hash");
      LV *heap = entry_alloca(heap_ty, "heap_bytes");
      LV *npes = entry_alloca(npes_ty, "group_n_pes");
      LV *names = entry_alloca(names_ty, "group_names");
      LV *wheres = entry_alloca(names_ty, "group_where");
      LV *layouts = entry_alloca(names_ty, "group_layout");
      for (size_t g = 0; g < ng; ++g) {
        B.CreateStore(i64(static_cast<int64_t>(p_.groups[g].layout_hash)),
                      B.CreateConstGEP2_64(heap_ty, hashes, 0, g));
        B.CreateStore(i64(p_.groups[g].heap_bytes), B.CreateConstGEP2_64(heap_ty, heap, 0, g));
        B.CreateStore(B.getInt32(p_.groups[g].n_pes), B.CreateConstGEP2_64(npes_ty, npes, 0, g));
        B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].name),
                      B.CreateConstGEP2_64(names_ty, names, 0, g));
        B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].where),
                      B.CreateConstGEP2_64(names_ty, wheres, 0, g));
        B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].layout),
                      B.CreateConstGEP2_64(names_ty, layouts, 0, g));
      }
      LV *st = call_rt(
          "pto_rt_kernel_enter", B.getInt32Ty(),
          {ctx_, hashes, B.getInt32(static_cast<int>(ng)), heap, npes, names, wheres, layouts});
      ret_if_error(st);
      // Re-read PE numbers: the group table is known only after kernel_enter.
      for (size_t g = 0; g < ng; ++g)
        my_pe_[static_cast<int64_t>(g)] = B.CreateSExt(
            call_rt("pto_rt_my_pe", B.getInt32Ty(), {ctx_, B.getInt32(static_cast<int>(g))}),
            B.getInt64Ty());
    }
    // Storage for materialized locals, and row scratch for fused groups. A run-time shape that
    // overflows or needs more than 2^62 bytes is a ShapeError at the op that defines the value
    // (as in the interpreter); a refused allocation (its RuntimeError recorded at that op's site)
    // returns at once instead of writing through a null pointer.
    for (ValueId id : plan_.materialized) {
      const ir::Value &v = p_.value(id);
      LV *bytes = checked_bytes(v.shape, bytes_of(v.dtype), result_size_overflow(v), def_site(id));
      storage_[id] = call_rt("pto_rt_alloc", B.getPtrTy(), {ctx_, bytes, B.getInt32(def_site(id))});
      ret_if_error(B.CreateZExt(B.CreateIsNull(storage_[id]), B.getInt32Ty()));
    }
    for (size_t g = 0; g < plan_.groups.size(); ++g) {
      auto &grp = plan_.groups[g];
      for (auto &[id, fv] : grp.values) {
        if (!fv.scratch)
          continue;
        // One row of the compute type (8 bytes), rounded up to whole vectors: cols is a checked
        // dim, but 8 bytes per element can still pass the limit.
        LV *bytes = checked_bytes({grp.cols + W}, 8, result_size_overflow(p_.value(id)),
                                  def_site(id));
        LV *buf = call_rt("pto_rt_alloc", B.getPtrTy(),
                          {ctx_, bytes, B.getInt32(site_.at(grp.ops.front()))});
        ret_if_error(B.CreateZExt(B.CreateIsNull(buf), B.getInt32Ty()));
        scratch_[{static_cast<int>(g), id}] = buf;
      }
    }
  }

  /// A loop bound evaluated at loop entry: its overflow is a RuntimeError at the loop's line.
  LV *loop_bound(const SymbolicScalar &s, const char *which) {
    LV *over = nullptr;
    LV *v = sym_checked(s, over);
    if (!s.is_concrete())
      fail_msg_if(over, PTO_ERROR_RUNTIME, cur_site_, loop_bound_overflow(which, s));
    return v;
  }

  int def_site(ValueId id) const {
    auto it = def_site_.find(id);
    return it == def_site_.end() ? -1 : it->second;
  }

  /// The bytes of a dense buffer of run-time `shape` with `esize`-byte elements (negative dims
  /// count as empty); fails the call with ShapeError `detail` at `site` when a dim overflows or
  /// the size, zero dims counted as 1, passes 2^62 bytes (dense_bytes in pto/size_math.h).
  LV *checked_bytes(const std::vector<SymbolicScalar> &shape, int64_t esize,
                    const std::string &detail, int site) {
    LV *bound = i64(esize), *empty = B.getFalse(), *bad = B.getFalse();
    for (auto &d : shape) {
      LV *over = nullptr;
      LV *n = sym_checked(d, over);
      empty = B.CreateOr(empty, B.CreateICmpSLE(n, i64(0)));
      LV *r = B.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, bound,
                                      smax(n, i64(1)));
      bad = B.CreateOr(bad, B.CreateOr(over, B.CreateExtractValue(r, 1)));
      bound = B.CreateExtractValue(r, 0);
    }
    bad = B.CreateOr(bad, B.CreateICmpSGT(bound, i64(kMaxExtent)));
    fail_msg_if(bad, PTO_ERROR_SHAPE, site, detail);
    return B.CreateSelect(empty, i64(0), bound);
  }

  // ---- regions ------------------------------------------------------------------------------
  void emit_region(const std::vector<Op> &ops) {
    const auto &items = plan_.regions.at(&ops);
    for (size_t k = 0; k < items.size(); ++k) {
      const auto &item = items[k];
      if (item.group >= 0) {
        const FusedGroup &g = plan_.groups[static_cast<size_t>(item.group)];
        LV *t0 = call_rt("pto_rt_trace_now", B.getInt64Ty(), {ctx_});
        emit_group(item.group);
        call_rt("pto_rt_trace_op", B.getVoidTy(),
                {ctx_, B.getInt32(site_.at(g.ops.front())),
                 B.getInt32(static_cast<int>(g.ops.size())), t0});
        continue;
      }
      const Op &op = *item.op;
      cur_site_ = site_.at(&op);
      if (k + 1 < items.size() && items[k + 1].op && pipelines(op, *items[k + 1].op)) {
        emit_pipelined(op, *items[k + 1].op);
        ++k;
        continue;
      }
      // Standalone compute ops (matmul, movement, axis reductions) get a timeline event; the
      // runtime traces shmem calls itself.
      const auto family = ir::op_info(op.kind).family;
      const bool traced = family != OpFamily::Shmem && family != OpFamily::Control &&
                          family != OpFamily::Check;
      LV *t0 = traced ? call_rt("pto_rt_trace_now", B.getInt64Ty(), {ctx_}) : nullptr;
      switch (op.kind) {
      case OpKind::Check: emit_check(op); break;
      case OpKind::Loop: {
        LV *start = loop_bound(op.start, "start"), *stop = loop_bound(op.stop, "stop");
        LV *step = loop_bound(op.step, "step");
        // A run-time step <= 0 runs no iteration (documented in control.h).
        stop = B.CreateSelect(B.CreateICmpSGT(step, i64(0)), stop, start);
        loop_bounds_[op.loop_id] = LoopBounds{start, stop, step};
        for_loop(start, stop, step, [&](LV *i) {
          loop_index_[op.loop_id] = i;
          emit_region(op.body);
        }, "loop");
        break;
      }
      case OpKind::Paths: {
        // PyPTO path dispatch: guards are evaluated at body entry, before any path runs (they
        // are disjoint by construction); the first that holds runs.
        auto *done = llvm::BasicBlock::Create(C, "paths.end", F);
        for (auto &path : op.paths) {
          cur_site_ = site_.at(&op);
          LV *g = sym(path.guard);
          auto *run = llvm::BasicBlock::Create(C, "path", F);
          auto *next = llvm::BasicBlock::Create(C, "path.next", F);
          B.CreateCondBr(B.CreateICmpNE(g, i64(0)), run, next);
          B.SetInsertPoint(run);
          emit_region(path.body);
          B.CreateBr(done);
          B.SetInsertPoint(next);
        }
        B.CreateBr(done);
        B.SetInsertPoint(done);
        break;
      }
      case OpKind::Sum:
      case OpKind::Amax:
      case OpKind::Amin:
      case OpKind::Prod: emit_reduce_axis(op); break;
      case OpKind::Matmul: emit_matmul(op); break;
      case OpKind::ShmemPut: emit_put(op); break;
      case OpKind::ShmemGet: emit_get(op); break;
      case OpKind::ShmemSignal:
      case OpKind::ShmemWaitUntil: emit_signal_wait(op); break;
      case OpKind::ShmemClearData: emit_clear(op); break;
      case OpKind::ShmemClearSignal: emit_clear_signal(op); break;
      case OpKind::Nop: break;
      default:
        if (ir::op_info(op.kind).family == OpFamily::Standalone) {
          emit_standalone(op);
          break;
        }
        if (ir::op_info(op.kind).family == OpFamily::Library) {
          emit_xop(op);
          break;
        }
        throw InternalError(op.where, ir::op_info(op.kind).name,
                            "op was not fused and has no standalone lowering (a ptojit bug)");
      }
      if (traced)
        call_rt("pto_rt_trace_op", B.getVoidTy(),
                {ctx_, B.getInt32(site_.at(&op)), B.getInt32(1), t0});
    }
  }

  // ---- vector values -------------------------------------------------------------------------
  llvm::VectorType *vty(Type *elem) { return llvm::FixedVectorType::get(elem, static_cast<unsigned>(W)); }

  /// Loads W (or masked) storage elements at `ptr` and converts them to the compute type.
  LV *load_vec(LV *ptr, DataType dt, LV *mask) {
    Type *st = storage_elem(dt);
    auto *vt = vty(st);
    LV *raw = mask ? static_cast<LV *>(B.CreateMaskedLoad(vt, ptr, llvm::Align(1), mask,
                                                           llvm::Constant::getNullValue(vt)))
                   : static_cast<LV *>(B.CreateAlignedLoad(vt, ptr, llvm::Align(1)));
    return widen(raw, dt);
  }
  LV *widen(LV *raw, DataType dt) {
    if (dt == DT_FP16)
      return B.CreateFPExt(B.CreateBitCast(raw, vty(B.getHalfTy())), vty(B.getFloatTy()));
    if (dt == DT_BF16)
      return B.CreateBitCast(B.CreateShl(B.CreateZExt(raw, vty(B.getInt32Ty())), 16),
                             vty(B.getFloatTy()));
    return raw;
  }
  /// Compute type -> storage bits (fp16/bf16 rounded to nearest even).
  LV *narrow(LV *v, DataType dt) {
    auto *vt = llvm::cast<llvm::VectorType>(v->getType());
    auto n = vt->getElementCount();
    if (dt == DT_FP16)
      return B.CreateBitCast(B.CreateFPTrunc(v, llvm::VectorType::get(B.getHalfTy(), n)),
                             llvm::VectorType::get(B.getInt16Ty(), n));
    if (dt == DT_BF16) {
      auto *i32v = llvm::VectorType::get(B.getInt32Ty(), n);
      LV *u = B.CreateBitCast(v, i32v);
      LV *lsb = B.CreateAnd(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32v, 1));
      LV *r = B.CreateLShr(B.CreateAdd(B.CreateAdd(u, llvm::ConstantInt::get(i32v, 0x7fff)), lsb), 16);
      LV *nanr = B.CreateOr(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32v, 0x40));
      LV *isnan = B.CreateFCmpUNO(v, v);
      return B.CreateTrunc(B.CreateSelect(isnan, nanr, r), llvm::VectorType::get(B.getInt16Ty(), n));
    }
    return v;
  }
  /// Rounds a compute value to what `dt` can hold (fp16/bf16 round trip).
  LV *round_to(LV *v, DataType dt) {
    if (dt != DT_FP16 && dt != DT_BF16)
      return v;
    return widen(narrow(v, dt), dt);
  }
  void store_vec(LV *v, LV *ptr, DataType dt, LV *mask) {
    LV *raw = narrow(v, dt);
    if (mask)
      B.CreateMaskedStore(raw, ptr, llvm::Align(1), mask);
    else
      B.CreateAlignedStore(raw, ptr, llvm::Align(1));
  }
  LV *splat(LV *s) { return B.CreateVectorSplat(static_cast<unsigned>(W), s); }

  LV *scalar_const(const ir::Scalar &scalar, DataType dt) {
    Type *ct = compute_elem(dt);
    const ir::Scalar s = ir::as_element(scalar, dt);
    if (is_fp(dt)) {
      // The scalar is an element of the tensor's dtype: rounded once, on the host.
      double v = s.f;
      if (dt == DT_FP16)
        v = fp16_to_fp32(fp64_to_fp16(v));
      else if (dt == DT_BF16)
        v = bf16_to_fp32(fp64_to_bf16(v));
      return llvm::ConstantFP::get(vty(ct), v);
    }
    return llvm::ConstantInt::get(vty(ct), static_cast<uint64_t>(s.i), true);
  }

  VecMath vec_math() {
    return VecMath{B, M, host_target().isa,
                   [this](LV *ok) { fail_unless(ok, kFailDivZero, i64(0), i64(0)); }};
  }
  LV *sleef(const char *fn, LV *v) {
    VecMath vm = vec_math();
    return sleef_call(vm, fn, "u10", {v});
  }

  LV *unary(const Op &op, LV *x, DataType in_dt, DataType out_dt) {
    bool fp = is_fp(in_dt);
    switch (op.kind) {
    case OpKind::Neg: return fp ? B.CreateFNeg(x) : B.CreateNeg(x);
    case OpKind::Abs:
      return fp ? B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
                : B.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, B.getFalse());
    case OpKind::Log: return sleef("log", x);
    case OpKind::Sqrt: return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case OpKind::Rsqrt:
      return B.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0),
                          B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case OpKind::Reciprocal: return B.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x);
    case OpKind::Cast: return convert(x, in_dt, out_dt);
    default: break;
    }
    VecMath vm = vec_math();
    return lower_unary_ext(vm, op, x, in_dt); // the catalogue ops (lower_elementwise.cpp)
  }

  LV *convert(LV *x, DataType from, DataType to) {
    Type *dst = vty(compute_elem(to));
    if (to == DT_BOOL) {
      LV *nz = is_fp(from) ? B.CreateFCmpUNE(x, llvm::Constant::getNullValue(x->getType()))
                           : B.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
      return B.CreateZExt(nz, dst);
    }
    if (from == DT_DOUBLE && (to == DT_FP16 || to == DT_BF16))
      return round_to_odd_f32(x); // one rounding overall: the caller rounds to fp16/bf16 next
    if (is_fp(from) && is_fp(to)) {
      if (x->getType() == dst)
        return x;
      return x->getType()->getScalarSizeInBits() < dst->getScalarSizeInBits()
                 ? B.CreateFPExt(x, dst)
                 : B.CreateFPTrunc(x, dst);
    }
    if (is_fp(from)) // truncate toward zero, NaN -> 0, saturating
      return B.CreateIntrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat
                                               : llvm::Intrinsic::fptosi_sat,
                               {dst, x->getType()}, {x});
    if ((to == DT_FP16 || to == DT_BF16) && x->getType()->getScalarSizeInBits() > 24)
      return int_to_f32_round_to_odd(x, !is_unsigned(from)); // the caller rounds it next
    if (is_fp(to))
      return is_unsigned(from) ? B.CreateUIToFP(x, dst) : B.CreateSIToFP(x, dst);
    return B.CreateIntCast(x, dst, !is_unsigned(from));
  }

  /// int32/int64 -> float rounded to odd (as pto::int64_to_fp32_round_to_odd): exact below 2^24
  /// in magnitude, else the top 24 significant bits with the last set when bits were dropped,
  /// so a following round to fp16/bf16 is the correctly rounded conversion (one rounding).
  LV *int_to_f32_round_to_odd(LV *x, bool is_signed) {
    auto *iv = vty(B.getInt64Ty());
    auto *i32v = vty(B.getInt32Ty());
    auto *fv = vty(B.getFloatTy());
    auto c64 = [&](int64_t c) { return llvm::ConstantInt::get(iv, static_cast<uint64_t>(c)); };
    LV *v = B.CreateIntCast(x, iv, is_signed);
    LV *neg = is_signed ? B.CreateICmpSLT(v, c64(0)) : nullptr;
    LV *m = neg ? B.CreateSelect(neg, B.CreateNeg(v), v) : v; // |INT64_MIN| = 2^63, unsigned
    LV *lz = B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, m, B.getFalse());
    LV *drop = B.CreateSub(c64(40), lz); // 64 - lz - 24 bits below the top 24
    drop = B.CreateSelect(B.CreateICmpSGT(drop, c64(0)), drop, c64(0));
    LV *kept = B.CreateLShr(m, drop);
    LV *lost = B.CreateAnd(m, B.CreateSub(B.CreateShl(c64(1), drop), c64(1)));
    kept = B.CreateOr(kept, B.CreateZExt(B.CreateICmpNE(lost, c64(0)), iv));
    LV *f = B.CreateSIToFP(B.CreateTrunc(kept, i32v), fv); // exact: kept < 2^24
    LV *scale = B.CreateBitCast(B.CreateShl(B.CreateTrunc(B.CreateAdd(drop, c64(127)), i32v), 23),
                                fv); // 2^drop, exact
    f = B.CreateFMul(f, scale);
    return neg ? B.CreateSelect(neg, B.CreateFNeg(f), f) : f;
  }

  /// double -> float rounded to odd (exact, or truncated toward zero with the last bit set), so
  /// a following round to fp16/bf16 equals rounding the double directly.
  LV *round_to_odd_f32(LV *d) {
    auto *fv = vty(B.getFloatTy());
    auto *iv = vty(B.getInt32Ty());
    LV *f = B.CreateFPTrunc(d, fv);
    LV *back = B.CreateFPExt(f, d->getType());
    LV *inexact = B.CreateFCmpONE(back, d);
    LV *over = B.CreateFCmpOGT(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                               B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
    LV *bits = B.CreateBitCast(f, iv);
    LV *toward0 = B.CreateSelect(over, B.CreateSub(bits, llvm::ConstantInt::get(iv, 1)), bits);
    LV *odd = B.CreateOr(toward0, llvm::ConstantInt::get(iv, 1));
    return B.CreateBitCast(B.CreateSelect(inexact, odd, bits), fv);
  }

  LV *binary(const Op &op, LV *a, LV *b, DataType dt, LV *mask) {
    bool fp = is_fp(dt);
    switch (op.kind) {
    case OpKind::Add: return fp ? B.CreateFAdd(a, b) : B.CreateAdd(a, b);
    case OpKind::Sub: return fp ? B.CreateFSub(a, b) : B.CreateSub(a, b);
    case OpKind::Mul: return fp ? B.CreateFMul(a, b) : B.CreateMul(a, b);
    case OpKind::Div: {
      if (fp)
        return B.CreateFDiv(a, b);
      // Masked-off lanes divide by 1; a zero divisor in a live lane fails the call.
      LV *one = llvm::ConstantInt::get(b->getType(), 1);
      LV *bs = mask ? B.CreateSelect(mask, b, one) : b;
      LV *zero = B.CreateICmpEQ(bs, llvm::Constant::getNullValue(b->getType()));
      LV *any = B.CreateOrReduce(zero);
      fail_unless(B.CreateNot(any), kFailDivZero, i64(0), i64(0));
      if (is_unsigned(dt))
        return B.CreateUDiv(a, bs);
      // INT_MIN / -1 wraps (two's complement) instead of trapping.
      LV *m1 = B.CreateICmpEQ(bs, llvm::Constant::getAllOnesValue(b->getType()));
      LV *safe = B.CreateSelect(m1, one, bs);
      return B.CreateSelect(m1, B.CreateNeg(a), B.CreateSDiv(a, safe));
    }
    case OpKind::Maximum:
      if (fp)
        break; // lower_binary_ext, which avoids llvm.maximum (see fp_max_min)
      return B.CreateBinaryIntrinsic(is_unsigned(dt) ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, a, b);
    case OpKind::Minimum:
      if (fp)
        break;
      return B.CreateBinaryIntrinsic(is_unsigned(dt) ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, a, b);
    default: break;
    }
    VecMath vm = vec_math();
    return lower_binary_ext(vm, op, a, b, dt, mask); // the catalogue ops (lower_elementwise.cpp)
  }

  LV *reduce_identity(OpKind k, DataType dt) {
    Type *t = vty(compute_elem(dt));
    if (is_fp(dt)) {
      if (k == OpKind::Sum)
        return llvm::ConstantFP::getNegativeZero(t);
      if (k == OpKind::Prod)
        return llvm::ConstantFP::get(t, 1.0);
      return llvm::ConstantFP::getInfinity(t, k == OpKind::Amax);
    }
    unsigned bits = compute_elem(dt)->getIntegerBitWidth();
    if (k == OpKind::Sum)
      return llvm::Constant::getNullValue(t);
    if (k == OpKind::Prod)
      return llvm::ConstantInt::get(t, 1);
    llvm::APInt v = k == OpKind::Amax
                        ? (is_unsigned(dt) ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits))
                        : (is_unsigned(dt) ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits));
    return llvm::ConstantInt::get(t, v);
  }
  /// A float sum accumulates from -0 (reduce_identity: -0 + x is x for every x, so only -0
  /// addends sum to -0, as IEEE 754 and NumPy), but an empty one is +0 (reduce_ops.h; the
  /// interpreter's rule too): `v` (a sum's scalar value), or +0 when end <= begin.
  LV *empty_sum_is_plus_zero(OpKind k, DataType dt, LV *end, LV *begin, LV *v) {
    if (k != OpKind::Sum || !is_fp(dt))
      return v;
    return B.CreateSelect(B.CreateICmpSGT(end, begin), v,
                          llvm::ConstantFP::get(v->getType(), 0.0));
  }
  LV *reduce_step(OpKind k, LV *acc, LV *v, DataType dt) {
    bool fp = is_fp(dt);
    if (k == OpKind::Sum)
      return fp ? B.CreateFAdd(acc, v) : B.CreateAdd(acc, v);
    if (k == OpKind::Prod)
      return fp ? B.CreateFMul(acc, v) : B.CreateMul(acc, v);
    if (fp)
      return B.CreateBinaryIntrinsic(k == OpKind::Amax ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, acc, v);
    auto id = k == OpKind::Amax ? (is_unsigned(dt) ? llvm::Intrinsic::umax : llvm::Intrinsic::smax)
                                : (is_unsigned(dt) ? llvm::Intrinsic::umin : llvm::Intrinsic::smin);
    return B.CreateBinaryIntrinsic(id, acc, v);
  }
  LV *reduce_horizontal(OpKind k, LV *acc, DataType dt) {
    if (is_fp(dt)) {
      if (k == OpKind::Sum) {
        llvm::FastMathFlags fmf;
        fmf.setAllowReassoc();
        B.setFastMathFlags(fmf);
        LV *r = B.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(compute_elem(dt)), acc);
        B.clearFastMathFlags();
        return r;
      }
      if (k == OpKind::Prod) {
        llvm::FastMathFlags fmf;
        fmf.setAllowReassoc();
        B.setFastMathFlags(fmf);
        LV *r = B.CreateFMulReduce(llvm::ConstantFP::get(compute_elem(dt), 1.0), acc);
        B.clearFastMathFlags();
        return r;
      }
      return k == OpKind::Amax ? B.CreateFPMaximumReduce(acc) : B.CreateFPMinimumReduce(acc);
    }
    if (k == OpKind::Sum)
      return B.CreateAddReduce(acc);
    if (k == OpKind::Prod)
      return B.CreateMulReduce(acc);
    if (k == OpKind::Amax)
      return is_unsigned(dt) ? B.CreateIntMaxReduce(acc, false) : B.CreateIntMaxReduce(acc, true);
    return is_unsigned(dt) ? B.CreateIntMinReduce(acc, false) : B.CreateIntMinReduce(acc, true);
  }

  // ---- fused groups --------------------------------------------------------------------------
  struct RowCtx {
    std::vector<LV *> row;                 ///< row indices (R-1)
    std::map<ValueId, LV *> uniform;       ///< per-row values (splat vectors)
    std::map<ValueId, LV *> row_base;      ///< element pointer of (row, col 0) per leaf/store
  };

  /// Element pointer of (row, col 0) of value `id` broadcast into the group space.
  LV *row_ptr(const FusedGroup &g, ValueId id, RowCtx &rc, bool for_store) {
    auto it = rc.row_base.find(id);
    if (it != rc.row_base.end())
      return it->second;
    const ir::Value &v = p_.value(id);
    Addr a = addr(id);
    size_t r = g.rank, vr = v.shape.size();
    LV *lin = i64(0);
    for (size_t d = 0; d + 1 < vr; ++d) { // right-aligned (numpy); the last dim is the column
      size_t gd = d + (r - vr);
      bool bc = v.shape[d].is_concrete() && v.shape[d].concrete() == 1 &&
                !(g.row_shape[gd].is_concrete() && g.row_shape[gd].concrete() == 1);
      if (!bc || for_store)
        lin = B.CreateAdd(lin, B.CreateMul(rc.row[gd], a.strides[d]));
    }
    LV *p = B.CreateGEP(storage_elem(v.dtype), a.base, lin);
    rc.row_base[id] = p;
    return p;
  }

  bool leaf_uniform(const FusedGroup &g, ValueId id) {
    const ir::Value &v = p_.value(id);
    bool single = g.cols.is_concrete() && g.cols.concrete() == 1;
    return !single && v.shape.back().is_concrete() && v.shape.back().concrete() == 1 &&
           v.shape.size() <= g.rank;
  }

  void emit_group(int gi) {
    const FusedGroup &g = plan_.groups[static_cast<size_t>(gi)];
    cur_site_ = site_.at(g.ops.front());
    size_t r = g.rank;
    std::vector<LV *> rvalid;
    for (auto &s : g.row_valid)
      rvalid.push_back(sym(s));
    LV *cols_valid = smin(sym(g.cols_valid), sym(g.cols));
    std::vector<LV *> row(r > 0 ? r - 1 : 0);
    // Row-dim tile loops: for each row dim, an outer tile loop and an inner row loop.
    std::function<void(size_t, std::vector<std::pair<LV *, LV *>>)> tile_rows =
        [&](size_t d, std::vector<std::pair<LV *, LV *>> bounds) {
          if (d + 1 >= r) {
            std::function<void(size_t)> inner = [&](size_t k) {
              if (k == bounds.size()) {
                int64_t tc = g.has_reduce ? 0 : g.tile[r - 1];
                if (tc <= 0 || (g.cols.is_concrete() && tc >= g.cols.concrete())) {
                  row_passes(g, gi, row, i64(0), cols_valid);
                } else {
                  for_loop(i64(0), cols_valid, i64(tc), [&](LV *c0) {
                    row_passes(g, gi, row, c0, smin(B.CreateAdd(c0, i64(tc)), cols_valid));
                  }, "ctile");
                }
                return;
              }
              for_loop(bounds[k].first, bounds[k].second, i64(1), [&](LV *i) {
                row[k] = i;
                inner(k + 1);
              }, "row");
            };
            inner(0);
            return;
          }
          int64_t t = g.tile[d];
          for_loop(i64(0), rvalid[d], i64(t), [&](LV *t0) {
            auto b2 = bounds;
            b2.push_back({t0, smin(B.CreateAdd(t0, i64(t)), rvalid[d])});
            tile_rows(d + 1, b2);
          }, "tile");
        };
    if (r == 0)
      return;
    tile_rows(0, {});
  }
  /// One row: uniform leaves, then the passes.
  void row_passes(const FusedGroup &g, int gi, std::vector<LV *> &row, LV *c_begin, LV *c_end) {
    RowCtx rc;
    rc.row = row;
    // Row pointers and uniform leaves first, so every later block is dominated by them.
    for (const Op *op : g.ops) {
      for (ValueId in : op->inputs)
        if (!g.values.count(in)) {
          row_ptr(g, in, rc, false);
          if (leaf_uniform(g, in) && !rc.uniform.count(in)) {
            const ir::Value &val = p_.value(in);
            LV *sc = B.CreateLoad(storage_elem(val.dtype), rc.row_base.at(in));
            rc.uniform[in] = widen(splat(sc), val.dtype);
          }
        }
      if (op->kind == OpKind::Assemble || g.values.at(op->outputs[0]).store)
        row_ptr(g, op->outputs[0], rc, true);
    }
    std::set<ValueId> done_uniform;
    // Reductions accumulated per pass.
    std::map<const Op *, LV *> acc_slot;
    auto compute_uniforms = [&](int upto) {
      for (const Op *op : g.ops) {
        if (op->kind == OpKind::Assemble)
          continue;
        ValueId out = op->outputs[0];
        const FusedValue &fv = g.values.at(out);
        if (!fv.uniform || fv.level > upto || done_uniform.count(out))
          continue;
        DataType dt = p_.value(out).dtype;
        LV *val;
        if (ir::op_info(op->kind).family == OpFamily::Reduce) {
          DataType in_dt = p_.value(op->inputs[0]).dtype;
          LV *acc = B.CreateLoad(vty(compute_elem(in_dt)), acc_slot.at(op));
          val = empty_sum_is_plus_zero(op->kind, in_dt, c_end, c_begin,
                                       reduce_horizontal(op->kind, acc, in_dt));
          val = round_to(splat(val), dt);
        } else {
          val = eval_op(g, gi, *op, rc, nullptr, /*pass=*/-1, nullptr, nullptr);
        }
        rc.uniform[out] = val;
        done_uniform.insert(out);
        if (fv.store) {
          LV *ptr = row_ptr(g, out, rc, true);
          LV *lane0 = B.CreateExtractElement(narrow(val, dt), uint64_t{0});
          B.CreateStore(lane0, ptr);
        }
      }
    };
    for (int pass = 0; pass < g.passes; ++pass) {
      compute_uniforms(pass);
      // Accumulators of the reductions fed in this pass.
      std::vector<const Op *> reds;
      for (const Op *op : g.ops)
        if (ir::op_info(op->kind).family == OpFamily::Reduce && g.values.at(op->outputs[0]).uniform &&
            level_of(g, op->inputs[0]) == pass) {
          DataType in_dt = p_.value(op->inputs[0]).dtype;
          LV *slot = entry_alloca(vty(compute_elem(in_dt)), "acc");
          B.CreateStore(reduce_identity(op->kind, in_dt), slot);
          acc_slot[op] = slot;
          reds.push_back(op);
        }
      auto body = [&](LV *c, LV *mask) {
        std::map<ValueId, LV *> memo;
        for (const Op *op : reds) {
          DataType in_dt = p_.value(op->inputs[0]).dtype;
          LV *v = value_at(g, gi, op->inputs[0], rc, c, mask, pass, memo);
          if (mask)
            v = B.CreateSelect(mask, v, reduce_identity(op->kind, in_dt));
          LV *acc = B.CreateLoad(v->getType(), acc_slot.at(op));
          B.CreateStore(reduce_step(op->kind, acc, v, in_dt), acc_slot.at(op));
        }
        for (const Op *op : g.ops) {
          if (op->kind == OpKind::Assemble) {
            ValueId x = op->inputs[0];
            if (level_of(g, x) != pass)
              continue;
            LV *v = value_at(g, gi, x, rc, c, mask, pass, memo);
            LV *ptr = B.CreateGEP(storage_elem(p_.value(x).dtype), row_ptr(g, op->outputs[0], rc, true), c);
            store_vec(v, ptr, p_.value(x).dtype, mask);
            continue;
          }
          ValueId out = op->outputs[0];
          const FusedValue &fv = g.values.at(out);
          if (fv.uniform || fv.level != pass || (!fv.store && !fv.scratch))
            continue;
          LV *v = value_at(g, gi, out, rc, c, mask, pass, memo);
          DataType dt = p_.value(out).dtype;
          if (fv.store) {
            LV *ptr = B.CreateGEP(storage_elem(dt), row_ptr(g, out, rc, true), c);
            store_vec(v, ptr, dt, mask);
          }
          if (fv.scratch) {
            LV *sp = B.CreateGEP(compute_elem(dt), scratch_.at({gi, out}), c);
            B.CreateAlignedStore(v, sp, llvm::Align(4)); // scratch has a full vector of slack
          }
        }
      };
      vector_columns(c_begin, c_end, body);
    }
    compute_uniforms(g.passes + 1);
  }

  int level_of(const FusedGroup &g, ValueId v) {
    auto it = g.values.find(v);
    return it == g.values.end() ? 0 : it->second.level;
  }

  /// for (c = begin; c + W <= end; c += W) body(c, null); then one masked tail.
  void vector_columns(LV *begin, LV *end, const std::function<void(LV *, LV *)> &body) {
    LV *last_full = B.CreateSub(end, i64(W - 1));
    LV *cslot = entry_alloca(B.getInt64Ty(), "c");
    B.CreateStore(begin, cslot);
    for_loop(begin, last_full, i64(W), [&](LV *c) {
      body(c, nullptr);
      B.CreateStore(B.CreateAdd(c, i64(W)), cslot);
    }, "vec");
    LV *c = B.CreateLoad(B.getInt64Ty(), cslot);
    auto *tail = llvm::BasicBlock::Create(C, "tail", F);
    auto *done = llvm::BasicBlock::Create(C, "tail.done", F);
    B.CreateCondBr(B.CreateICmpSLT(c, end), tail, done);
    B.SetInsertPoint(tail);
    std::vector<llvm::Constant *> iota;
    for (int i = 0; i < W; ++i)
      iota.push_back(B.getInt64(static_cast<uint64_t>(i)));
    LV *lanes = B.CreateAdd(splat(c), llvm::ConstantVector::get(iota));
    LV *mask = B.CreateICmpSLT(lanes, splat(end));
    body(c, mask);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// The value of `id` at columns [c, c+W) of the current row, in pass `pass`. Iterative over
  /// the group's producers (each value's inputs first, from an explicit stack), so a chain of
  /// any length lowers without deep recursion; eval_op then finds its inputs in `memo`.
  LV *value_at(const FusedGroup &g, int gi, ValueId id, RowCtx &rc, LV *c, LV *mask, int pass,
               std::map<ValueId, LV *> &memo) {
    auto known = [&](ValueId v) -> LV * {
      if (auto it = memo.find(v); it != memo.end())
        return it->second;
      if (auto it = rc.uniform.find(v); it != rc.uniform.end())
        return it->second;
      return nullptr;
    };
    std::vector<ValueId> todo{id};
    while (!todo.empty()) {
      const ValueId v = todo.back();
      if (known(v)) {
        todo.pop_back();
        continue;
      }
      auto gv = g.values.find(v);
      if (gv == g.values.end()) { // a leaf
        todo.pop_back();
        const ir::Value &val = p_.value(v);
        LV *base = row_ptr(g, v, rc, false);
        if (leaf_uniform(g, v)) {
          LV *sc = B.CreateLoad(storage_elem(val.dtype), base);
          rc.uniform[v] = widen(splat(sc), val.dtype);
        } else {
          memo[v] = load_vec(B.CreateGEP(storage_elem(val.dtype), base, c), val.dtype, mask);
        }
        continue;
      }
      if (gv->second.level < pass && gv->second.scratch) {
        todo.pop_back();
        DataType dt = p_.value(v).dtype;
        memo[v] = B.CreateAlignedLoad(vty(compute_elem(dt)),
                                      B.CreateGEP(compute_elem(dt), scratch_.at({gi, v}), c),
                                      llvm::Align(4));
        continue;
      }
      const Op *op = g.producers.at(v);
      bool ready = true;
      for (size_t i = op->inputs.size(); i-- > 0;) // inputs in order: in(0) is emitted first
        if (!known(op->inputs[i])) {
          todo.push_back(op->inputs[i]);
          ready = false;
        }
      if (!ready)
        continue;
      todo.pop_back();
      memo[v] = eval_op(g, gi, *op, rc, c, pass, mask, &memo);
    }
    return known(id);
  }

  LV *eval_op(const FusedGroup &g, int gi, const Op &op, RowCtx &rc, LV *c, int pass, LV *mask,
              std::map<ValueId, LV *> *memo) {
    std::map<ValueId, LV *> local;
    auto &m = memo ? *memo : local;
    DataType out_dt = p_.value(op.outputs[0]).dtype;
    auto in = [&](size_t i) { return value_at(g, gi, op.inputs[i], rc, c, mask, pass, m); };
    LV *v = nullptr;
    switch (ir::op_info(op.kind).family) {
    case OpFamily::Unary: v = unary(op, in(0), p_.value(op.inputs[0]).dtype, out_dt); break;
    case OpFamily::Binary: {
      DataType dt = p_.value(op.inputs[0]).dtype;
      LV *a, *b;
      if (op.scalar) {
        LV *s = scalar_const(*op.scalar, dt);
        a = op.scalar_first ? s : in(0);
        b = op.scalar_first ? in(0) : s;
      } else {
        a = in(0);
        b = in(1);
      }
      v = binary(op, a, b, dt, mask);
      break;
    }
    case OpFamily::Select: {
      LV *cond = in(0);
      v = B.CreateSelect(B.CreateICmpNE(cond, llvm::Constant::getNullValue(cond->getType())), in(1),
                         in(2));
      break;
    }
    case OpFamily::Create: v = scalar_const(*op.scalar, out_dt); break;
    case OpFamily::Reduce: v = in(0); break; // a reduction over one column is the identity
    default:
      throw InternalError(op.where, ir::op_info(op.kind).name, "cannot evaluate in a fused group");
    }
    return round_to(v, out_dt);
  }

  // ---- standalone reductions over a non-last axis ---------------------------------------------
  void emit_standalone(const Op &op) { // lower_standalone.cpp
    StandaloneEnv env{B, M, F, alloca_point_,
                      [this](ValueId id) {
                        Addr a = addr(id);
                        return StandaloneAddr{a.base, a.strides};
                      },
                      [this](const SymbolicScalar &s) { return sym(s); }};
    lower_standalone(env, p_, op);
  }

  /// Library ops (xops.h): fills an XCall on the stack and calls pto_rt_xop.
  void emit_xop(const Op &op) {
    Type *i64t = B.getInt64Ty(), *ptr = B.getPtrTy();
    // XTensor: ptr, dtype, rank, shape[R], valid[R], strides[R]
    auto *xt = llvm::StructType::get(
        C, {ptr, i64t, i64t, llvm::ArrayType::get(i64t, kXMaxRank),
            llvm::ArrayType::get(i64t, kXMaxRank), llvm::ArrayType::get(i64t, kXMaxRank)});
    std::vector<ValueId> ids = op.inputs;
    ids.insert(ids.end(), op.outputs.begin(), op.outputs.end());
    // The descriptors are mostly compile-time constants: copy them from a constant global and
    // store only the run-time fields (base pointers, symbolic extents). Field-by-field stores of
    // every entry cost the SLP vectorizer a third of the compile time of library-heavy kernels.
    auto *arr_t = llvm::ArrayType::get(xt, ids.size());
    auto *dims_t = llvm::ArrayType::get(i64t, kXMaxRank);
    LV *arr = entry_alloca(arr_t, "xt");
    struct Patch {
      LV *value;
      unsigned k, field, d;
    };
    std::vector<Patch> patches;
    std::vector<llvm::Constant *> descs;
    auto as_const = [&](LV *v, unsigned k, unsigned f, unsigned d) -> llvm::Constant * {
      if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(v))
        return c;
      patches.push_back({v, k, f, d});
      return B.getInt64(0);
    };
    for (size_t k = 0; k < ids.size(); ++k) {
      const ir::Value &v = p_.value(ids[k]);
      if (v.shape.size() > static_cast<size_t>(kXMaxRank))
        throw InternalError(op.where, ir::op_info(op.kind).name, "rank above kXMaxRank");
      Addr a = addr(ids[k]);
      const auto ku = static_cast<unsigned>(k);
      patches.push_back({a.base, ku, 0, 0});
      std::vector<llvm::Constant *> shape(kXMaxRank, B.getInt64(0)), valid = shape,
                                           strides = shape;
      for (size_t d = 0; d < v.shape.size(); ++d) {
        const auto du = static_cast<unsigned>(d);
        LV *sz = sym(v.shape[d]), *val = sym(v.valid[d]);
        LV *c = B.CreateSelect(B.CreateICmpSLT(val, sz), val, sz);
        c = B.CreateSelect(B.CreateICmpSLT(c, i64(0)), i64(0), c);
        shape[d] = as_const(sz, ku, 3, du);
        valid[d] = as_const(c, ku, 4, du);
        strides[d] = as_const(a.strides[d], ku, 5, du);
      }
      descs.push_back(llvm::ConstantStruct::get(
          xt, {llvm::ConstantPointerNull::get(B.getPtrTy()), B.getInt64(static_cast<uint64_t>(v.dtype)),
               B.getInt64(v.shape.size()), llvm::ConstantArray::get(dims_t, shape),
               llvm::ConstantArray::get(dims_t, valid), llvm::ConstantArray::get(dims_t, strides)}));
    }
    auto *init = new llvm::GlobalVariable(M, arr_t, true, llvm::GlobalValue::PrivateLinkage,
                                          llvm::ConstantArray::get(arr_t, descs), "xop.desc");
    B.CreateMemCpy(arr, llvm::MaybeAlign(8), init, llvm::MaybeAlign(8),
                   M.getDataLayout().getTypeAllocSize(arr_t));
    for (const auto &pt : patches) {
      LV *t = B.CreateConstGEP2_32(arr_t, arr, 0, pt.k);
      LV *field = B.CreateStructGEP(xt, t, pt.field);
      if (pt.field >= 3)
        field = B.CreateConstGEP2_32(dims_t, field, 0, pt.d);
      B.CreateStore(pt.value, field);
    }
    auto const_array = [&](llvm::Type *et, std::vector<llvm::Constant *> elems) -> LV * {
      if (elems.empty())
        return llvm::ConstantPointerNull::get(B.getPtrTy());
      auto *at = llvm::ArrayType::get(et, elems.size());
      return new llvm::GlobalVariable(M, at, true, llvm::GlobalValue::PrivateLinkage,
                                      llvm::ConstantArray::get(at, elems), "xop.attrs");
    };
    std::vector<llvm::Constant *> ints, reals;
    for (auto v : op.ints)
      ints.push_back(B.getInt64(static_cast<uint64_t>(v)));
    for (auto v : op.reals)
      reals.push_back(llvm::ConstantFP::get(B.getDoubleTy(), v));
    int64_t scalar_i = 0;
    if (op.scalar) {
      const double f = op.scalar->is_int ? static_cast<double>(op.scalar->i) : op.scalar->f;
      reals.push_back(llvm::ConstantFP::get(B.getDoubleTy(), f));
      scalar_i = op.scalar->is_int ? op.scalar->i : xop_scalar_int(op.scalar->f);
    }
    // XCall: ctx, site, kind, n_inputs, n_tensors, tensors, axis, keepdim, n_ints, ints,
    //        n_reals, reals, has_scalar, scalar_i
    auto *xc = llvm::StructType::get(C, {ptr, i64t, i64t, i64t, i64t, ptr, i64t, i64t, i64t, ptr,
                                         i64t, ptr, i64t, i64t});
    LV *call = entry_alloca(xc, "xcall");
    std::vector<LV *> fields = {ctx_,
                                i64(cur_site_),
                                i64(static_cast<int64_t>(op.kind)),
                                i64(static_cast<int64_t>(op.inputs.size())),
                                i64(static_cast<int64_t>(ids.size())),
                                arr,
                                i64(op.axis),
                                i64(op.keepdim ? 1 : 0),
                                i64(static_cast<int64_t>(ints.size())),
                                const_array(i64t, ints),
                                i64(static_cast<int64_t>(reals.size())),
                                const_array(B.getDoubleTy(), reals),
                                i64(op.scalar ? 1 : 0),
                                i64(scalar_i)};
    for (unsigned f = 0; f < fields.size(); ++f)
      B.CreateStore(fields[f], B.CreateStructGEP(xc, call, f));
    ret_if_error(call_rt("pto_rt_xop", B.getInt32Ty(), {call}));
  }

  void emit_matmul(const Op &op) { // lower_matmul.cpp
    MatmulEnv env{B, M, F, ctx_, alloca_point_,
                  [this](ValueId id) {
                    Addr a = addr(id);
                    return MatmulAddr{a.base, a.strides};
                  },
                  [this](const SymbolicScalar &s) { return sym(s); }};
    lower_matmul(env, p_, op);
  }

  void emit_reduce_axis(const Op &op) {
    const ir::Value &x = p_.value(op.inputs[0]);
    const ir::Value &y = p_.value(op.outputs[0]);
    Addr ax = addr(x.id), ay = addr(y.id);
    size_t r = x.shape.size();
    size_t axis = static_cast<size_t>(op.axis);
    std::vector<LV *> xvalid;
    for (auto &s : x.valid)
      xvalid.push_back(sym(s));
    Type *ct = compute_elem(x.dtype);
    LV *acc_slot = entry_alloca(ct, "racc");
    std::vector<LV *> idx(r);
    // Scalar loops over the kept dims, an inner loop over the axis (LLVM may vectorize it).
    std::function<void(size_t)> outer = [&](size_t d) {
      if (d == r) {
        LV *ident = B.CreateExtractElement(reduce_identity(op.kind, x.dtype), uint64_t{0});
        B.CreateStore(empty_sum_is_plus_zero(op.kind, x.dtype, xvalid[axis], i64(0), ident),
                      acc_slot);
        for_loop(i64(0), xvalid[axis], i64(1), [&](LV *k) {
          LV *lin = i64(0);
          for (size_t e = 0; e < r; ++e)
            lin = B.CreateAdd(lin, B.CreateMul(e == axis ? k : idx[e], ax.strides[e]));
          LV *raw = B.CreateLoad(storage_elem(x.dtype), B.CreateGEP(storage_elem(x.dtype), ax.base, lin));
          LV *v = B.CreateExtractElement(widen(splat(raw), x.dtype), uint64_t{0});
          LV *a = B.CreateLoad(ct, acc_slot);
          LV *sa = splat(a), *sv = splat(v);
          B.CreateStore(B.CreateExtractElement(reduce_step(op.kind, sa, sv, x.dtype), uint64_t{0}), acc_slot);
        }, "k");
        LV *res = round_to(splat(B.CreateLoad(ct, acc_slot)), y.dtype);
        LV *lin = i64(0);
        size_t yd = 0;
        for (size_t e = 0; e < r; ++e) {
          if (e == axis) {
            if (op.keepdim)
              ++yd;
            continue;
          }
          lin = B.CreateAdd(lin, B.CreateMul(idx[e], ay.strides[yd++]));
        }
        B.CreateStore(B.CreateExtractElement(narrow(res, y.dtype), uint64_t{0}),
                      B.CreateGEP(storage_elem(y.dtype), ay.base, lin));
        return;
      }
      if (d == axis) {
        idx[d] = i64(0);
        outer(d + 1);
        return;
      }
      for_loop(i64(0), xvalid[d], i64(1), [&](LV *i) {
        idx[d] = i;
        outer(d + 1);
      }, "r");
    };
    outer(0);
  }

  // ---- shmem ops ----------------------------------------------------------------------------
  /// Nested tile loops over a static `shape` with tile `tile` (row-major, tails smaller).
  void for_tiles(const std::vector<int64_t> &shape, const std::vector<int64_t> &tile,
                 const std::function<void(const std::vector<LV *> &, const std::vector<LV *> &)> &body) {
    size_t r = shape.size();
    std::vector<LV *> off(r), size(r);
    std::function<void(size_t)> rec = [&](size_t d) {
      if (d == r) {
        body(off, size);
        return;
      }
      int64_t t = tile[d];
      for_loop(i64(0), i64(shape[d]), i64(t), [&](LV *o) {
        off[d] = o;
        size[d] = smin(i64(t), B.CreateSub(i64(shape[d]), o));
        rec(d + 1);
      }, "st");
    };
    rec(0);
  }

  struct Block {
    LV *ptr;
  };
  /// Fills a pto_block {extent[4], src_stride[4], dst_stride[4]} (leading dims padded with 1).
  LV *make_block(const std::vector<LV *> &ext, const std::vector<LV *> &ss, const std::vector<LV *> &ds) {
    auto *ty = llvm::ArrayType::get(B.getInt64Ty(), 12);
    LV *blk = entry_alloca(ty, "block");
    size_t r = ext.size();
    for (size_t k = 0; k < 4; ++k) {
      bool pad = k < 4 - r;
      size_t d = pad ? 0 : k - (4 - r);
      B.CreateStore(pad ? i64(1) : ext[d], B.CreateConstGEP2_64(ty, blk, 0, k));
      B.CreateStore(pad ? i64(0) : ss[d], B.CreateConstGEP2_64(ty, blk, 0, 4 + k));
      B.CreateStore(pad ? i64(0) : ds[d], B.CreateConstGEP2_64(ty, blk, 0, 8 + k));
    }
    return blk;
  }

  std::vector<int64_t> shmem_strides(const ir::ShmemInfo &s) {
    std::vector<int64_t> st(s.shape.size(), 1);
    for (size_t d = s.shape.size(); d-- > 1;)
      st[d - 1] = st[d] * s.shape[d];
    return st;
  }

  /// Each dim of the window [view_offsets + toff, + ext) must lie inside the shmem data (checked
  /// once per tile, like the interpreter): otherwise the call fails with a DistributedError
  /// before the runtime touches memory.
  void check_shmem_window(const ir::ShmemInfo &s, const Op &op, const std::vector<LV *> &toff,
                          const std::vector<LV *> &ext) {
    for (size_t d = 0; d < s.shape.size(); ++d) {
      // o <= shape - ext, not o + ext <= shape: a huge offset must not wrap the window's end.
      LV *o = B.CreateAdd(sym(op.view_offsets[d]), toff[d]);
      LV *shape = i64(s.shape[d]);
      LV *ok = B.CreateAnd(B.CreateICmpSGE(o, i64(0)),
                           B.CreateICmpSLE(o, B.CreateSub(shape, ext[d])));
      LV *last = B.CreateSelect(B.CreateICmpSLE(o, shape),
                                B.CreateSub(B.CreateAdd(o, ext[d]), i64(1)), o);
      LV *bad_index = B.CreateSelect(B.CreateICmpSLT(o, i64(0)), o, last);
      fail_unless(ok, kFailOffset, bad_index, i64(s.shape[d]));
    }
  }

  /// The op's whole window (view_offsets + view_shape) inside the data, checked once per op.
  void check_whole_window(const ir::ShmemInfo &s, const Op &op) {
    std::vector<LV *> zero(op.view_shape.size(), i64(0)), ext;
    for (auto v : op.view_shape)
      ext.push_back(i64(v));
    check_shmem_window(s, op, zero, ext);
  }

  /// Byte offset in the heap of element (view_offsets + tile_off) of shmem `s`.
  LV *heap_offset(const ir::ShmemInfo &s, const Op &op, const std::vector<LV *> &toff) {
    auto st = shmem_strides(s);
    LV *lin = i64(0);
    for (size_t d = 0; d < st.size(); ++d)
      lin = B.CreateAdd(lin, B.CreateMul(B.CreateAdd(sym(op.view_offsets[d]), toff[d]), i64(st[d])));
    return B.CreateAdd(i64(s.data_offset_bytes), B.CreateMul(lin, i64(bytes_of(s.dtype))));
  }

  using TileBody = std::function<void(const std::vector<LV *> &, const std::vector<LV *> &)>;

  void emit_put(const Op &op) { for_tiles(op.view_shape, op.tile.vec, prepare_put(op)); }
  void emit_get(const Op &op) { for_tiles(op.view_shape, op.tile.vec, prepare_get(op)); }
  void emit_signal_wait(const Op &op) {
    for_tiles(op.slots->view_shape, op.slots->tile, prepare_signal_wait(op));
  }

  /// Reference §6.4 tile-level pipelining: a signal whose only pred is the put just before it,
  /// over the same window and tiles, fires per tile right after that tile's put (the receiver
  /// can start on tile 0 while tile 1 is in flight); likewise a get right after its wait reads
  /// each tile as soon as that tile's slot is satisfied.
  bool pipelines(const Op &first, const Op &second) {
    bool pair = (first.kind == OpKind::ShmemPut && second.kind == OpKind::ShmemSignal) ||
                (first.kind == OpKind::ShmemWaitUntil && second.kind == OpKind::ShmemGet);
    if (!pair || first.shmem != second.shmem || second.preds.size() != 1 ||
        second.preds[0] != first.outputs[0] || first.view_shape != second.view_shape ||
        first.view_offsets.size() != second.view_offsets.size())
      return false;
    for (size_t d = 0; d < first.view_offsets.size(); ++d)
      if (!first.view_offsets[d].same_as(second.view_offsets[d]))
        return false;
    const Op &sw = first.kind == OpKind::ShmemPut ? second : first;
    const Op &data = first.kind == OpKind::ShmemPut ? first : second;
    size_t r = data.view_shape.size();
    return sw.slots && std::equal(sw.slots->tile.begin(), sw.slots->tile.end(),
                                  data.tile.vec.begin()) &&
           sw.slots->tile.size() == r;
  }

  void emit_pipelined(const Op &first, const Op &second) {
    auto body = [&](const Op &op) {
      cur_site_ = site_.at(&op);
      return op.kind == OpKind::ShmemPut   ? prepare_put(op)
             : op.kind == OpKind::ShmemGet ? prepare_get(op)
                                           : prepare_signal_wait(op);
    };
    TileBody a = body(first), b = body(second);
    int sa = site_.at(&first), sb = site_.at(&second);
    for_tiles(first.view_shape, first.kind == OpKind::ShmemPut ? first.tile.vec : second.tile.vec,
              [&](const std::vector<LV *> &off, const std::vector<LV *> &size) {
                cur_site_ = sa;
                a(off, size);
                cur_site_ = sb;
                b(off, size);
              });
  }

  TileBody prepare_put(const Op &op) {
    const auto &s = p_.shmems[static_cast<size_t>(op.shmem)];
    const ir::Value &src = p_.value(op.inputs[0]);
    Addr as = addr(src.id);
    std::vector<LV *> svalid;
    for (auto &v : src.valid)
      svalid.push_back(sym(v));
    LV *pe = B.CreateTrunc(sym(op.pe), B.getInt32Ty());
    auto dst = shmem_strides(s);
    std::vector<LV *> ds;
    for (auto d : dst)
      ds.push_back(i64(d));
    check_whole_window(s, op);
    return [=, this, &s, &op](const std::vector<LV *> &off, const std::vector<LV *> &size) {
      std::vector<LV *> ext;
      LV *lin = i64(0);
      LV *nonempty = B.getTrue();
      for (size_t d = 0; d < off.size(); ++d) {
        LV *e = smin(smax(B.CreateSub(svalid[d], off[d]), i64(0)), size[d]);
        ext.push_back(e);
        nonempty = B.CreateAnd(nonempty, B.CreateICmpSGT(e, i64(0)));
        lin = B.CreateAdd(lin, B.CreateMul(off[d], as.strides[d]));
      }
      auto *go = llvm::BasicBlock::Create(C, "put", F);
      auto *skip = llvm::BasicBlock::Create(C, "put.skip", F);
      B.CreateCondBr(nonempty, go, skip);
      B.SetInsertPoint(go);
      LV *blk = make_block(ext, as.strides, ds);
      LV *sp = B.CreateGEP(storage_elem(src.dtype), as.base, lin);
      LV *st = call_rt("pto_rt_put", B.getInt32Ty(),
                       {ctx_, B.getInt32(s.group_index), pe,
                        B.getInt32(op.atomic == ir::Atomic::Add ? PTO_ATOMIC_ADD : PTO_ATOMIC_SET), sp,
                        B.getInt32(src.dtype), heap_offset(s, op, off),
                        i64(s.data_offset_bytes + s.data_bytes), B.getInt32(s.dtype), blk,
                        B.getInt32(cur_site_)});
      ret_if_error(st);
      B.CreateBr(skip);
      B.SetInsertPoint(skip);
    };
  }

  TileBody prepare_get(const Op &op) {
    const auto &s = p_.shmems[static_cast<size_t>(op.shmem)];
    const ir::Value &out = p_.value(op.outputs[1]);
    Addr ao = addr(out.id);
    std::vector<LV *> valid;
    for (auto &v : op.view_valid)
      valid.push_back(sym(v));
    LV *pe = B.CreateTrunc(sym(op.pe), B.getInt32Ty());
    auto src = shmem_strides(s);
    std::vector<LV *> ss;
    for (auto d : src)
      ss.push_back(i64(d));
    check_whole_window(s, op);
    return [=, this, &s, &op](const std::vector<LV *> &off, const std::vector<LV *> &size) {
      std::vector<LV *> ext;
      LV *lin = i64(0);
      LV *nonempty = B.getTrue();
      for (size_t d = 0; d < off.size(); ++d) {
        LV *e = smin(smax(B.CreateSub(valid[d], off[d]), i64(0)), size[d]);
        ext.push_back(e);
        nonempty = B.CreateAnd(nonempty, B.CreateICmpSGT(e, i64(0)));
        lin = B.CreateAdd(lin, B.CreateMul(off[d], ao.strides[d]));
      }
      auto *go = llvm::BasicBlock::Create(C, "get", F);
      auto *skip = llvm::BasicBlock::Create(C, "get.skip", F);
      B.CreateCondBr(nonempty, go, skip);
      B.SetInsertPoint(go);
      // pto_block: "src" is the heap side, "dst" the local side, as pto_rt_get documents.
      LV *blk = make_block(ext, ss, ao.strides);
      LV *dp = B.CreateGEP(storage_elem(out.dtype), ao.base, lin);
      LV *st = call_rt("pto_rt_get", B.getInt32Ty(),
                       {ctx_, B.getInt32(s.group_index), pe, heap_offset(s, op, off),
                        i64(s.data_offset_bytes + s.data_bytes), B.getInt32(s.dtype), dp,
                        B.getInt32(out.dtype), blk, B.getInt32(cur_site_)});
      ret_if_error(st);
      B.CreateBr(skip);
      B.SetInsertPoint(skip);
    };
  }

  TileBody prepare_signal_wait(const Op &op) {
    const auto &s = p_.shmems[static_cast<size_t>(op.shmem)];
    const ir::SlotGeometry &g = *op.slots;
    size_t r = g.data_shape.size();
    LV *row = sym(op.pe);
    // Reference §6.3: tileIndex = Σ tileIdx_d·Π_{e<d} ceil(V_e/T_e) + viewTileNum·Σ viewIdx_d·Π_{e<d}(R_e/V_e)
    std::vector<LV *> O, zero(r, i64(0)), vext;
    for (auto &o : g.view_offsets)
      O.push_back(sym(o));
    for (auto v : g.view_shape)
      vext.push_back(i64(v));
    if (!s.shape.empty())
      check_shmem_window(s, op, zero, vext);
    // The slot row must be a PE of the group, and the window tile-aligned within its view
    // (reference §6.3: otherwise two windows alias the same slots).
    fail_unless(B.CreateAnd(B.CreateICmpSGE(row, i64(0)), B.CreateICmpSLT(row, i64(s.n_pes))),
                kFailPe, row, i64(s.n_pes));
    for (size_t d = 0; d < r; ++d) {
      LV *within = B.CreateSRem(O[d], i64(g.view_shape[d]));
      fail_unless(B.CreateICmpEQ(B.CreateSRem(within, i64(g.tile[d])), i64(0)), kFailSlotAlign,
                  within, i64(g.tile[d]));
    }
    LV *target = op.kind == OpKind::ShmemSignal && !op.target_all
                     ? B.CreateTrunc(sym(op.target_pe), B.getInt32Ty())
                     : B.getInt32(-1);
    return [=, this, &s, &g, &op](const std::vector<LV *> &off, const std::vector<LV *> &) {
      LV *tile_part = i64(0), *view_part = i64(0);
      int64_t tmul = 1, vmul = 1;
      for (size_t d = 0; d < r; ++d) {
        LV *vi = B.CreateSDiv(O[d], i64(g.view_shape[d]));
        LV *ti = B.CreateSDiv(B.CreateAdd(B.CreateSRem(O[d], i64(g.view_shape[d])), off[d]), i64(g.tile[d]));
        tile_part = B.CreateAdd(tile_part, B.CreateMul(ti, i64(tmul)));
        view_part = B.CreateAdd(view_part, B.CreateMul(vi, i64(vmul)));
        tmul *= (g.view_shape[d] + g.tile[d] - 1) / g.tile[d];
        vmul *= g.data_shape[d] / g.view_shape[d];
      }
      LV *tile_index = B.CreateAdd(tile_part, B.CreateMul(view_part, i64(g.view_tile_num)));
      LV *slot = B.CreateAdd(B.CreateMul(row, i64(g.total_tile_num)), tile_index);
      LV *slot_off = B.CreateAdd(i64(s.signal_offset_bytes), B.CreateMul(slot, i64(32)));
      LV *st;
      if (op.kind == OpKind::ShmemSignal) {
        st = call_rt("pto_rt_signal", B.getInt32Ty(),
                     {ctx_, B.getInt32(s.group_index), target, slot_off,
                      B.getInt32(op.atomic == ir::Atomic::Add ? PTO_ATOMIC_ADD : PTO_ATOMIC_SET),
                      B.getInt32(op.signal), B.getInt32(cur_site_)});
      } else {
        st = call_rt("pto_rt_wait_until", B.getInt32Ty(),
                     {ctx_, B.getInt32(s.group_index), slot_off, B.getInt32(static_cast<int>(op.cmp)),
                      B.getInt32(op.signal), B.getInt32(op.clear ? 1 : 0), slot,
                      B.getInt32(cur_site_)});
      }
      ret_if_error(st);
    };
  }

  void emit_clear_signal(const Op &op) {
    const auto &s = p_.shmems[static_cast<size_t>(op.shmem)];
    LV *blk = make_block({i64(s.signal_bytes / 4)}, {i64(1)}, {i64(1)});
    LV *status = call_rt("pto_rt_clear", B.getInt32Ty(),
                         {ctx_, B.getInt32(s.group_index), i64(s.signal_offset_bytes),
                          i64(s.signal_offset_bytes + s.signal_bytes), B.getInt32(DT_INT32), blk,
                          B.getInt32(cur_site_)});
    ret_if_error(status);
  }

  void emit_clear(const Op &op) {
    const auto &s = p_.shmems[static_cast<size_t>(op.shmem)];
    // Per dim, as the interpreter: a window that leaves a dim can still lie inside the heap
    // block, where the runtime's byte-limit check would let it zero the neighbouring rows.
    check_whole_window(s, op);
    auto st = shmem_strides(s);
    std::vector<LV *> ds;
    for (auto d : st)
      ds.push_back(i64(d));
    for_tiles(op.view_shape, op.tile.vec, [&](const std::vector<LV *> &off, const std::vector<LV *> &size) {
      LV *blk = make_block(size, ds, ds);
      LV *status = call_rt("pto_rt_clear", B.getInt32Ty(),
                           {ctx_, B.getInt32(s.group_index), heap_offset(s, op, off),
                            i64(s.data_offset_bytes + s.data_bytes), B.getInt32(s.dtype), blk,
                            B.getInt32(cur_site_)});
      ret_if_error(status);
    });
  }
};

class LlvmExecutable : public Executable {
public:
  LlvmExecutable(std::unique_ptr<JitModule> m, std::vector<std::string> sites) : mod_(std::move(m)) {
    sites_ = std::move(sites);
    fn_ = reinterpret_cast<Fn>(mod_->entry());
    code_bytes = mod_->code_bytes();
  }
  int32_t run(pto_ctx *ctx, void *const *args, const int64_t *dims) const override {
    return fn_(ctx, args, dims);
  }

private:
  using Fn = int32_t (*)(pto_ctx *, void *const *, const int64_t *);
  std::unique_ptr<JitModule> mod_;
  Fn fn_ = nullptr;
};

} // namespace

std::shared_ptr<const Executable> build_llvm_executable(const ir::Program &p,
                                                        const CompileOptions &opts,
                                                        const StageDump &dump) {
  auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>(p.name, *ctx);
  try {
    Lowering(p, opts, *ctx, *mod).run();
  } catch (...) {
    mod.reset(); // the module must die before its context
    throw;
  }
  auto jm = jit_compile(std::move(ctx), std::move(mod), dump);
  auto exe = std::make_shared<LlvmExecutable>(std::move(jm), site_table(p));
  exe->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return exe;
}

} // namespace pto::codegen
