// kernel_builder.cpp - See kernel_builder.h. The symbolic-scalar evaluator is in
// lower_symbolic.cpp.
#include "llvm/kernel_builder.h"

#include "pto/error.h"
#include "pto/size_math.h"

#include "llvm/dtype_codec.h"
#include "llvm/host_target.h"
#include "llvm/llvm_loops.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

namespace pto::codegen {

using ir::ValueId;
using ir::ValueKind;
using LV = llvm::Value;

KernelBuilder::KernelBuilder(const ir::Program &p, const SiteTable &sites,
                             const CompileOptions &opts, llvm::LLVMContext &c, llvm::Module &m)
    : p_(p), sites_(sites), opts_(opts), C(c), M(m), B(c), W(opts.vector_lanes) {}

llvm::Function *KernelBuilder::begin_function(const char *name) {
  F = llvm::Function::Create(kernel_type(C), llvm::Function::ExternalLinkage, name, M);
  HostTarget &ht = host_target();
  F->addFnAttr("target-cpu", ht.cpu);
  F->addFnAttr("target-features", ht.features);
  F->addFnAttr(llvm::Attribute::NoUnwind);
  ctx_ = F->getArg(0);
  args_ = F->getArg(1);
  dims_ = F->getArg(2);
  auto *entry = llvm::BasicBlock::Create(C, "entry", F);
  auto *body = llvm::BasicBlock::Create(C, "body", F);
  B.SetInsertPoint(entry);
  alloca_point_ = B.CreateBr(body);
  B.SetInsertPoint(body);
  return F;
}

Isa KernelBuilder::isa() const { return host_target().isa; }

// ---- values in memory --------------------------------------------------------------------------
/// The buffer of a root value: a kernel argument, or a materialized local.
LV *KernelBuilder::base_of(const ir::Value &root) {
  if (root.kind == ValueKind::Param)
    return B.CreateLoad(
        B.getPtrTy(),
        B.CreateConstGEP1_64(B.getPtrTy(), args_, static_cast<uint64_t>(root.param_index)));
  if (root.kind == ValueKind::Local) {
    auto it = storage_.find(root.id);
    if (it == storage_.end())
      throw InternalError("<codegen>", "lower_llvm",
                          "local %" + root.name + " has no storage; rerun with PTO_DUMP=ir");
    return it->second;
  }
  throw InternalError("<codegen>", "lower_llvm",
                      "value %" + root.name + " is not addressable memory");
}

std::vector<LV *> KernelBuilder::strides_of(const std::vector<SymbolicScalar> &shape) {
  std::vector<LV *> s(shape.size());
  LV *acc = i64(1);
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    if (d > 0)
      acc = B.CreateMul(acc, sym(shape[d]));
  }
  return s;
}

Addr KernelBuilder::addr(ValueId id) {
  const ir::Value &v = p_.value(id);
  Addr a;
  const ir::Value &root = v.kind == ValueKind::View ? p_.value(v.base) : v;
  LV *base = base_of(root);
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
        fail_unless(B.CreateOr(B.CreateICmpSLE(valid, i64(0)), in), PTO_FAIL_VIEW_BOUNDS, bad,
                    sym(root.shape[d]));
      }
      lin = B.CreateAdd(lin, B.CreateMul(off, a.strides[d]));
    }
    base = B.CreateGEP(storage_type(B, v.dtype), base, lin);
  }
  a.base = base;
  return a;
}

LV *KernelBuilder::elem_ptr(const Addr &a, DataType dt, const std::vector<LV *> &idx) {
  LV *lin = i64(0);
  for (size_t d = 0; d < idx.size(); ++d)
    lin = B.CreateAdd(lin, B.CreateMul(idx[d], a.strides[d]));
  return B.CreateGEP(storage_type(B, dt), a.base, lin);
}

LV *KernelBuilder::clamp_valid(LV *valid, LV *dim) {
  LV *c = B.CreateSelect(B.CreateICmpSLT(valid, dim), valid, dim);
  return B.CreateSelect(B.CreateICmpSLT(c, i64(0)), i64(0), c);
}

LV *KernelBuilder::checked_bytes(const std::vector<SymbolicScalar> &shape, int64_t esize,
                                 const std::string &detail, int site) {
  LV *bound = i64(esize), *empty = B.getFalse(), *bad = B.getFalse();
  for (auto &d : shape) {
    LV *over = nullptr;
    LV *n = sym_checked(d, over);
    empty = B.CreateOr(empty, B.CreateICmpSLE(n, i64(0)));
    LV *r = B.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, bound, smax(n, i64(1)));
    bad = B.CreateOr(bad, B.CreateOr(over, B.CreateExtractValue(r, 1)));
    bound = B.CreateExtractValue(r, 0);
  }
  bad = B.CreateOr(bad, B.CreateICmpSGT(bound, i64(kMaxExtent)));
  fail_msg_if(bad, PTO_ERROR_SHAPE, site, detail);
  return B.CreateSelect(empty, i64(0), bound);
}

// ---- control flow ------------------------------------------------------------------------------
llvm::BasicBlock *KernelBuilder::block(const llvm::Twine &name) {
  return llvm::BasicBlock::Create(C, name, F);
}

void KernelBuilder::for_loop(LV *start, LV *end, LV *step, const std::function<void(LV *)> &body,
                             const char *name) {
  emit_for_loop(B, F, start, end, step, body, name);
}

void KernelBuilder::if_then(LV *cond, const std::function<void()> &then,
                            const llvm::Twine &then_name, const llvm::Twine &end_name) {
  branch(cond, then, nullptr, then_name, nullptr, end_name);
}

void KernelBuilder::if_else(LV *cond, const std::function<void()> &then,
                            const std::function<void()> &otherwise, const llvm::Twine &then_name,
                            const llvm::Twine &else_name, const llvm::Twine &join_name) {
  branch(cond, then, &otherwise, then_name, &else_name, join_name);
}

void KernelBuilder::branch(LV *cond, const std::function<void()> &then,
                           const std::function<void()> *otherwise, const llvm::Twine &then_name,
                           const llvm::Twine *else_name, const llvm::Twine &join_name) {
  auto *t = block(then_name);
  auto *f = otherwise ? block(*else_name) : nullptr;
  auto *j = block(join_name);
  B.CreateCondBr(cond, t, f ? f : j);
  B.SetInsertPoint(t);
  then();
  B.CreateBr(j);
  if (f) {
    B.SetInsertPoint(f);
    (*otherwise)();
    B.CreateBr(j);
  }
  B.SetInsertPoint(j);
}

LV *KernelBuilder::join_phi(llvm::BasicBlock *join, LV *a, llvm::BasicBlock *from, LV *b) {
  return emit_join_phi(B, join, a, from, b);
}

void KernelBuilder::ret_if_error(LV *status) {
  auto *bad = block("rt_err");
  auto *ok = block("rt_ok");
  B.CreateCondBr(B.CreateICmpNE(status, B.getInt32(0)), bad, ok, unlikely());
  B.SetInsertPoint(bad);
  B.CreateRet(status);
  B.SetInsertPoint(ok);
}

void KernelBuilder::fail_unless(LV *ok, pto_fail_kind kind, LV *a, LV *b) {
  auto *bad = block("fail");
  auto *cont = block("cont");
  B.CreateCondBr(ok, cont, bad, likely());
  B.SetInsertPoint(bad);
  LV *st = call_rt(RtFn::Fail, {ctx_, B.getInt32(kind), B.getInt32(cur_site_), a, b});
  B.CreateRet(st);
  B.SetInsertPoint(cont);
}

void KernelBuilder::fail_msg_if(LV *bad, int32_t error_class, int site, const std::string &detail) {
  auto *fail = block("fail");
  auto *cont = block("cont");
  B.CreateCondBr(bad, fail, cont, unlikely());
  B.SetInsertPoint(fail);
  B.CreateRet(call_rt(RtFn::FailMsg, {ctx_, B.getInt32(error_class), B.getInt32(site),
                                      B.CreateGlobalStringPtr(detail)}));
  B.SetInsertPoint(cont);
}

void KernelBuilder::ret_check_fail(int site, int32_t error_class, const std::string &message,
                                   const std::vector<LV *> &args) {
  const uint64_t n = args.size();
  auto *arr_ty = llvm::ArrayType::get(B.getInt64Ty(), n == 0 ? 1 : n);
  LV *arr = entry_alloca(arr_ty, "check_args");
  for (uint64_t k = 0; k < n; ++k)
    B.CreateStore(args[k], B.CreateConstGEP2_64(arr_ty, arr, 0, k));
  B.CreateRet(
      call_rt(RtFn::CheckFail,
              {ctx_, B.getInt32(site), B.getInt32(error_class), B.CreateGlobalStringPtr(message),
               B.CreateConstGEP2_64(arr_ty, arr, 0, 0), i64(static_cast<int64_t>(n))}));
}

void KernelBuilder::check_fail_unless(LV *ok, int site, int32_t error_class,
                                      const std::string &message, const std::vector<LV *> &args) {
  auto *bad = block("fail");
  auto *cont = block("cont");
  B.CreateCondBr(ok, cont, bad, likely());
  B.SetInsertPoint(bad);
  ret_check_fail(site, error_class, message, args);
  B.SetInsertPoint(cont);
}

llvm::MDNode *KernelBuilder::likely() { return llvm::MDBuilder(C).createBranchWeights(1000, 1); }
llvm::MDNode *KernelBuilder::unlikely() { return llvm::MDBuilder(C).createBranchWeights(1, 1000); }

// ---- values ------------------------------------------------------------------------------------
LV *KernelBuilder::smin(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSLT(a, b), a, b); }
LV *KernelBuilder::smax(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSGT(a, b), a, b); }

llvm::VectorType *KernelBuilder::vec_type(llvm::Type *elem) {
  return llvm::FixedVectorType::get(elem, static_cast<unsigned>(W));
}

LV *KernelBuilder::splat(LV *s) { return B.CreateVectorSplat(static_cast<unsigned>(W), s); }

LV *KernelBuilder::entry_alloca(llvm::Type *t, const char *name) {
  llvm::IRBuilder<> eb(alloca_point_);
  return eb.CreateAlloca(t, nullptr, name);
}

// ---- the runtime -------------------------------------------------------------------------------
LV *KernelBuilder::call_rt(RtFn fn, llvm::ArrayRef<LV *> args) {
  return codegen::call_rt(B, fn, args);
}

LV *KernelBuilder::call_rt_in_entry(RtFn fn, llvm::ArrayRef<LV *> args) {
  llvm::IRBuilder<> eb(alloca_point_);
  return codegen::call_rt(eb, fn, args);
}

} // namespace pto::codegen
