// kernel_builder.cpp - See kernel_builder.h. The symbolic-scalar evaluator is in
// lower_symbolic.cpp.
#include "llvm/kernel_builder.h"

#include "pto/error.h"
#include "pto/size_math.h"

#include "llvm/dtype_codec.h"
#include "llvm/jit_engine.h"
#include "llvm/llvm_loops.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

namespace pto::codegen {

using ir::ValueId;
using ir::ValueKind;
using LV = llvm::Value;

KernelBuilder::KernelBuilder(const ir::Program &p, const CompileOptions &opts, llvm::LLVMContext &c,
                             llvm::Module &m)
    : p_(p), opts_(opts), context_(c), module_(m), builder_(c), lanes_(opts.vector_lanes) {}

llvm::Function *KernelBuilder::begin_function(const char *name) {
  auto *ptr = builder_.getPtrTy();
  auto *fty = llvm::FunctionType::get(builder_.getInt32Ty(), {ptr, ptr, ptr}, false);
  function_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, module_);
  HostTarget &ht = host_target();
  function_->addFnAttr("target-cpu", ht.cpu);
  function_->addFnAttr("target-features", ht.features);
  function_->addFnAttr(llvm::Attribute::NoUnwind);
  ctx_ = function_->getArg(0);
  args_ = function_->getArg(1);
  dims_ = function_->getArg(2);
  auto *entry = llvm::BasicBlock::Create(context_, "entry", function_);
  auto *body = llvm::BasicBlock::Create(context_, "body", function_);
  builder_.SetInsertPoint(entry);
  alloca_point_ = builder_.CreateBr(body);
  builder_.SetInsertPoint(body);
  return function_;
}

bool KernelBuilder::has_avx512f() const { return host_target().avx512f; }

bool KernelBuilder::has_avx2() const {
  return ("," + host_target().features + ",").find(",+avx2,") != std::string::npos;
}

// ---- sites -------------------------------------------------------------------------------------
void KernelBuilder::number_sites(const std::vector<ir::Op> &ops) {
  for (auto &op : ops) {
    site_[&op] = static_cast<int>(site_.size());
    for (ValueId id : op.outputs)
      def_site_.try_emplace(id, site_[&op]);
    number_sites(op.body);
    for (auto &path : op.paths)
      number_sites(path.body);
  }
}

int KernelBuilder::def_site(ValueId id) const {
  auto it = def_site_.find(id);
  return it == def_site_.end() ? -1 : it->second;
}

// ---- values in memory --------------------------------------------------------------------------
/// The buffer of a root value: a kernel argument, or a materialized local.
LV *KernelBuilder::base_of(const ir::Value &root) {
  if (root.kind == ValueKind::Param)
    return builder_.CreateLoad(
        builder_.getPtrTy(), builder_.CreateConstGEP1_64(builder_.getPtrTy(), args_,
                                                         static_cast<uint64_t>(root.param_index)));
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
      acc = builder_.CreateMul(acc, sym(shape[d]));
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
        LV *in = builder_.CreateAnd(
            builder_.CreateICmpSGE(off, i64(0)),
            builder_.CreateICmpSLE(builder_.CreateAdd(off, valid), sym(root.shape[d])));
        // The message names an index of the window outside the dim (as the interpreter): the
        // first when the window starts before 0, else the last.
        LV *bad = builder_.CreateSelect(builder_.CreateICmpSLT(off, i64(0)), off,
                                        builder_.CreateSub(builder_.CreateAdd(off, valid), i64(1)));
        fail_unless(builder_.CreateOr(builder_.CreateICmpSLE(valid, i64(0)), in), kFailViewBounds,
                    bad, sym(root.shape[d]));
      }
      lin = builder_.CreateAdd(lin, builder_.CreateMul(off, a.strides[d]));
    }
    base = builder_.CreateGEP(storage_type(builder_, v.dtype), base, lin);
  }
  a.base = base;
  return a;
}

LV *KernelBuilder::elem_ptr(const Addr &a, DataType dt, const std::vector<LV *> &idx) {
  LV *lin = i64(0);
  for (size_t d = 0; d < idx.size(); ++d)
    lin = builder_.CreateAdd(lin, builder_.CreateMul(idx[d], a.strides[d]));
  return builder_.CreateGEP(storage_type(builder_, dt), a.base, lin);
}

LV *KernelBuilder::clamp_valid(LV *valid, LV *dim) {
  LV *c = builder_.CreateSelect(builder_.CreateICmpSLT(valid, dim), valid, dim);
  return builder_.CreateSelect(builder_.CreateICmpSLT(c, i64(0)), i64(0), c);
}

LV *KernelBuilder::checked_bytes(const std::vector<SymbolicScalar> &shape, int64_t esize,
                                 const std::string &detail, int site) {
  LV *bound = i64(esize), *empty = builder_.getFalse(), *bad = builder_.getFalse();
  for (auto &d : shape) {
    LV *over = nullptr;
    LV *n = sym_checked(d, over);
    empty = builder_.CreateOr(empty, builder_.CreateICmpSLE(n, i64(0)));
    LV *r =
        builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, bound, smax(n, i64(1)));
    bad = builder_.CreateOr(bad, builder_.CreateOr(over, builder_.CreateExtractValue(r, 1)));
    bound = builder_.CreateExtractValue(r, 0);
  }
  bad = builder_.CreateOr(bad, builder_.CreateICmpSGT(bound, i64(kMaxExtent)));
  fail_msg_if(bad, PTO_ERROR_SHAPE, site, detail);
  return builder_.CreateSelect(empty, i64(0), bound);
}

// ---- control flow ------------------------------------------------------------------------------
llvm::BasicBlock *KernelBuilder::block(const llvm::Twine &name) {
  return llvm::BasicBlock::Create(context_, name, function_);
}

void KernelBuilder::for_loop(LV *start, LV *end, LV *step, const std::function<void(LV *)> &body,
                             const char *name) {
  emit_for_loop(builder_, function_, start, end, step, body, name);
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
  builder_.CreateCondBr(cond, t, f ? f : j);
  builder_.SetInsertPoint(t);
  then();
  builder_.CreateBr(j);
  if (f) {
    builder_.SetInsertPoint(f);
    (*otherwise)();
    builder_.CreateBr(j);
  }
  builder_.SetInsertPoint(j);
}

LV *KernelBuilder::join_phi(llvm::BasicBlock *join, LV *a, llvm::BasicBlock *from, LV *b) {
  auto *end = builder_.GetInsertBlock();
  builder_.CreateBr(join);
  builder_.SetInsertPoint(join);
  auto *phi = builder_.CreatePHI(a->getType(), 2);
  phi->addIncoming(a, from);
  phi->addIncoming(b, end);
  return phi;
}

void KernelBuilder::ret_if_error(LV *status) {
  auto *bad = block("rt_err");
  auto *ok = block("rt_ok");
  builder_.CreateCondBr(builder_.CreateICmpNE(status, builder_.getInt32(0)), bad, ok, unlikely());
  builder_.SetInsertPoint(bad);
  builder_.CreateRet(status);
  builder_.SetInsertPoint(ok);
}

void KernelBuilder::fail_unless(LV *ok, int kind, LV *a, LV *b) {
  auto *bad = block("fail");
  auto *cont = block("cont");
  builder_.CreateCondBr(ok, cont, bad, likely());
  builder_.SetInsertPoint(bad);
  LV *st = call_rt("pto_rt_fail", builder_.getInt32Ty(),
                   {ctx_, builder_.getInt32(kind), builder_.getInt32(cur_site_), a, b});
  builder_.CreateRet(st);
  builder_.SetInsertPoint(cont);
}

void KernelBuilder::fail_msg_if(LV *bad, int32_t error_class, int site, const std::string &detail) {
  auto *fail = block("fail");
  auto *cont = block("cont");
  builder_.CreateCondBr(bad, fail, cont, unlikely());
  builder_.SetInsertPoint(fail);
  builder_.CreateRet(call_rt("pto_rt_fail_msg", builder_.getInt32Ty(),
                             {ctx_, builder_.getInt32(error_class), builder_.getInt32(site),
                              builder_.CreateGlobalStringPtr(detail)}));
  builder_.SetInsertPoint(cont);
}

llvm::MDNode *KernelBuilder::likely() {
  return llvm::MDBuilder(context_).createBranchWeights(1000, 1);
}
llvm::MDNode *KernelBuilder::unlikely() {
  return llvm::MDBuilder(context_).createBranchWeights(1, 1000);
}

// ---- values ------------------------------------------------------------------------------------
LV *KernelBuilder::smin(LV *a, LV *b) {
  return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
}
LV *KernelBuilder::smax(LV *a, LV *b) {
  return builder_.CreateSelect(builder_.CreateICmpSGT(a, b), a, b);
}

llvm::VectorType *KernelBuilder::vec_type(llvm::Type *elem) {
  return llvm::FixedVectorType::get(elem, static_cast<unsigned>(lanes_));
}

LV *KernelBuilder::splat(LV *s) {
  return builder_.CreateVectorSplat(static_cast<unsigned>(lanes_), s);
}

LV *KernelBuilder::entry_alloca(llvm::Type *t, const char *name) {
  llvm::IRBuilder<> eb(alloca_point_);
  return eb.CreateAlloca(t, nullptr, name);
}

// ---- the runtime -------------------------------------------------------------------------------
LV *KernelBuilder::call_rt(const char *name, llvm::Type *ret, std::vector<LV *> args) {
  return emit_call_rt(builder_, name, ret, std::move(args));
}

LV *KernelBuilder::call_rt_in_entry(const char *name, llvm::Type *ret, std::vector<LV *> args) {
  llvm::IRBuilder<> eb(alloca_point_);
  return emit_call_rt(eb, name, ret, std::move(args));
}

LV *KernelBuilder::emit_call_rt(llvm::IRBuilderBase &at, const char *name, llvm::Type *ret,
                                std::vector<LV *> args) {
  std::vector<llvm::Type *> tys;
  for (auto *a : args)
    tys.push_back(a->getType());
  auto callee = module_.getOrInsertFunction(name, llvm::FunctionType::get(ret, tys, false));
  return at.CreateCall(callee, args);
}

} // namespace pto::codegen
