// lower_llvm.cpp - Lowers a traced program to one LLVM function
//   i32 @pto_kernel(ptr ctx, ptr args, ptr dims)
// The kernel skeleton lives here: entry (kernel_enter, PE numbers, storage of materialized locals
// and row scratch), the walk over regions (fused groups, loops, paths, run-time checks), and exit.
// Each op family has its own file (lower_fused, lower_reduce, lower_shmem, lower_library,
// lower_standalone, lower_matmul), all on one KernelBuilder. Run-time faults call pto_rt_fail and
// return its status (no exception crosses generated code).
#include "llvm/lower_llvm.h"

#include "pto/error.h"

#include "llvm/jit_engine.h"
#include "llvm/kernel_builder.h"
#include "llvm/lower_fused.h"
#include "llvm/lower_library.h"
#include "llvm/lower_matmul.h"
#include "llvm/lower_reduce.h"
#include "llvm/lower_shmem.h"
#include "llvm/lower_standalone.h"
#include "llvm/split_function.h"
#include "passes/fuse.h"
#include "passes/pipeline.h"
#include "passes/run_checks.h"
#include "passes/tile_expand.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <map>

namespace pto::codegen {

using ir::Op;
using ir::OpFamily;
using ir::ValueId;

namespace {

using LV = llvm::Value;

class Lowering {
public:
  Lowering(const PlannedProgram &pp, const CompileOptions &opts, llvm::LLVMContext &c,
           llvm::Module &m)
      : pp_(pp), p_(pp.program), plan_(pp.plan), kb_(pp.program, pp.sites, opts, c, m),
        B(kb_.builder()) {}

  llvm::Function *run() {
    llvm::Function *F = kb_.begin_function("pto_kernel");
    emit_entry();
    emit_region(p_.body);
    if (!p_.shmems.empty()) {
      LV *st = kb_.call_rt(RtFn::KernelExit, {kb_.ctx_arg()});
      B.CreateRet(st);
    } else {
      B.CreateRet(B.getInt32(0));
    }
    if (!pending_.empty())
      throw InternalError("<codegen>", "lower_llvm",
                          "a local's defining op was never lowered (a ptojit bug)");
    outline_parallel(*F, par_regions_); // innermost: before the chunks that hold them
    outline_chunks(*F, std::move(chunks_));
    return F;
  }

private:
  const PlannedProgram &pp_;
  const ir::Program &p_;
  const FusionPlan &plan_;
  KernelBuilder kb_;
  llvm::IRBuilder<> &B;
  FusedScratch scratch_;
  std::vector<Chunk> chunks_;          ///< runs of region items to outline (split_function.h)
  std::vector<ParRegion> par_regions_; ///< row-tile loops to run on the pool (parallel_outline.h)
  std::vector<OpId> top_ids_;          ///< the ids of the kernel body's ops, ascending
  /// Materialized locals not allocated yet, by the top-level op that defines them.
  std::map<OpId, std::vector<ValueId>> pending_;
  int depth_ = 0; ///< nesting of the region being emitted

  // ---- entry ---------------------------------------------------------------------------------
  void emit_entry() {
    bind_pe_numbers();
    if (!p_.shmems.empty()) {
      emit_kernel_enter();
      bind_pe_numbers(); // the group table is known only after kernel_enter
    }
    // Storage for materialized locals: each is allocated once per call, just before the
    // top-level op (loop, paths or op) that defines it, so that a chunk's locals live in its
    // function (split_function.h) rather than across the whole kernel; locals with no defining
    // op here. Row scratch for fused groups.
    for (const Op &op : p_.body)
      top_ids_.push_back(kb_.site_of(op));
    for (ValueId id : plan_.materialized) {
      const int def = kb_.def_site(id);
      auto it = std::upper_bound(top_ids_.begin(), top_ids_.end(), def);
      if (def == kNoOp || it == top_ids_.begin())
        allocate(id);
      else
        pending_[*std::prev(it)].push_back(id);
    }
    scratch_ = alloc_fused_scratch(kb_, plan_);
  }

  /// Allocates (zeroed) the storage of materialized local `id`. A run-time shape that overflows
  /// or needs more than 2^62 bytes is a ShapeError at the op that defines the value (as in the
  /// interpreter); a refused allocation (its RuntimeError recorded at that op's site) returns at
  /// once instead of writing through a null pointer.
  void allocate(ValueId id) {
    const ir::Value &v = p_.value(id);
    const int site = kb_.def_site(id);
    LV *bytes = kb_.checked_bytes(v.shape, bytes_of(v.dtype), result_size_overflow(v), site);
    LV *buf = kb_.call_rt(RtFn::Alloc, {kb_.ctx_arg(), bytes, B.getInt32(site)});
    kb_.set_storage(id, buf);
    kb_.ret_if_error(B.CreateZExt(B.CreateIsNull(buf), B.getInt32Ty()));
  }

  /// Allocates the locals defined under top-level op `top` (an id of p_.body's ops).
  void allocate_pending(OpId top) {
    auto it = pending_.find(top);
    if (it == pending_.end())
      return;
    for (ValueId id : it->second)
      allocate(id);
    pending_.erase(it);
  }

  /// Before top-level item `k` (and the items it runs with, up to `last`): its locals.
  void allocate_for(const std::vector<RegionItem> &items, size_t k, size_t last) {
    for (size_t j = k; j <= last && j < items.size(); ++j) {
      if (items[j].group >= 0)
        for (OpId o : plan_.groups[static_cast<size_t>(items[j].group)].ops)
          allocate_pending(o);
      else
        allocate_pending(items[j].op);
    }
  }

  void bind_pe_numbers() {
    for (size_t g = 0; g < p_.groups.size(); ++g)
      kb_.bind_my_pe(
          static_cast<int64_t>(g),
          B.CreateSExt(kb_.call_rt(RtFn::MyPe, {kb_.ctx_arg(), B.getInt32(static_cast<int>(g))}),
                       B.getInt64Ty()));
  }

  /// pto_rt_kernel_enter with the program's group table (hash, heap bytes, PEs, names, where
  /// they were created, layouts), each field an array on the stack.
  void emit_kernel_enter() {
    size_t ng = p_.groups.size();
    auto *heap_ty = llvm::ArrayType::get(B.getInt64Ty(), ng);
    auto *npes_ty = llvm::ArrayType::get(B.getInt32Ty(), ng);
    auto *names_ty = llvm::ArrayType::get(B.getPtrTy(), ng);
    LV *hashes = kb_.entry_alloca(heap_ty, "group_hash");
    LV *heap = kb_.entry_alloca(heap_ty, "heap_bytes");
    LV *npes = kb_.entry_alloca(npes_ty, "group_n_pes");
    LV *names = kb_.entry_alloca(names_ty, "group_names");
    LV *wheres = kb_.entry_alloca(names_ty, "group_where");
    LV *layouts = kb_.entry_alloca(names_ty, "group_layout");
    LV *zero = kb_.entry_alloca(heap_ty, "zero_bytes");
    for (size_t g = 0; g < ng; ++g) {
      B.CreateStore(kb_.i64(p_.groups[g].zero_bytes), B.CreateConstGEP2_64(heap_ty, zero, 0, g));
      B.CreateStore(kb_.i64(static_cast<int64_t>(p_.groups[g].layout_hash)),
                    B.CreateConstGEP2_64(heap_ty, hashes, 0, g));
      B.CreateStore(kb_.i64(p_.groups[g].heap_bytes), B.CreateConstGEP2_64(heap_ty, heap, 0, g));
      B.CreateStore(B.getInt32(p_.groups[g].n_pes), B.CreateConstGEP2_64(npes_ty, npes, 0, g));
      B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].name),
                    B.CreateConstGEP2_64(names_ty, names, 0, g));
      B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].where),
                    B.CreateConstGEP2_64(names_ty, wheres, 0, g));
      B.CreateStore(B.CreateGlobalStringPtr(p_.groups[g].layout),
                    B.CreateConstGEP2_64(names_ty, layouts, 0, g));
    }
    kb_.call_rt(RtFn::HeapZeroing, {kb_.ctx_arg(), B.getInt32(static_cast<int>(ng)), zero});
    LV *st =
        kb_.call_rt(RtFn::KernelEnter, {kb_.ctx_arg(), hashes, B.getInt32(static_cast<int>(ng)),
                                        heap, npes, names, wheres, layouts});
    kb_.ret_if_error(st);
    bind_heap_tables(kb_, p_); // lower_shmem.h: the peers' heap bases, once per kernel entry
  }

  // ---- regions -------------------------------------------------------------------------------
  /// Starts a new block at the insert point (a chunk boundary) and returns it.
  llvm::BasicBlock *boundary(const char *name) {
    auto *b = kb_.block(name);
    B.CreateBr(b);
    B.SetInsertPoint(b);
    return b;
  }

  void emit_region(const std::vector<Op> &ops) {
    const auto &items = pp_.items(ops);
    // A long region is cut into chunks of kChunkItems items, each outlined into a function of
    // its own after lowering (split_function.h): compile time stays linear in the program size.
    const bool chunked = items.size() > kChunkItems;
    size_t in_chunk = 0, open = 0; // open: 1 + the index in chunks_ of this region's last
    ++depth_;
    for (size_t k = 0; k < items.size(); ++k) {
      if (chunked && in_chunk++ % kChunkItems == 0) {
        auto *b = boundary("chunk");
        if (open)
          chunks_[open - 1].end = b;
        chunks_.push_back({b, nullptr, depth_});
        open = chunks_.size();
      }
      const auto &item = items[k];
      if (depth_ == 1)
        allocate_for(items, k, item.group >= 0 ? k : std::max(k, pipelined_partner(items, k)));
      if (item.group >= 0) {
        const FusedGroup &g = plan_.groups[static_cast<size_t>(item.group)];
        LV *t0 = kb_.call_rt(RtFn::TraceNow, {kb_.ctx_arg()});
        lower_fused_group(kb_, plan_, item.group, scratch_, par_regions_);
        kb_.call_rt(RtFn::TraceOp, {kb_.ctx_arg(), B.getInt32(g.ops.front()),
                                    B.getInt32(static_cast<int>(g.ops.size())), t0});
        continue;
      }
      const Op &op = kb_.op(item.op);
      kb_.set_current_site(item.op);
      if (size_t next = pipelined_partner(items, k); next != 0) {
        for (size_t c = k + 1; c < next; ++c) { // the Check ops in between, first (see below)
          kb_.set_current_site(items[c].op);
          emit_op(kb_.op(items[c].op));
        }
        kb_.set_current_site(item.op);
        lower_shmem_pipelined(kb_, op, kb_.op(items[next].op));
        k = next;
        continue;
      }
      emit_op(op);
    }
    if (open)
      chunks_[open - 1].end = boundary("chunk.end");
    --depth_;
  }

  /// The index of the item that items[k] runs per tile with (shmem_pipelines), or 0. Run-time
  /// Check ops between the two are transparent: they touch no memory, and what they read (the
  /// symbols and elements of parameters and locals) neither a put, a signal, a wait nor a get
  /// writes, so they give the same verdict before the pair; the caller runs them first.
  size_t pipelined_partner(const std::vector<RegionItem> &items, size_t k) const {
    size_t j = k + 1;
    while (j < items.size() && items[j].op != kNoOp &&
           kb_.op(items[j].op).kind == ir::OpKind::Check)
      ++j;
    if (j < items.size() && items[j].op != kNoOp &&
        shmem_pipelines(kb_.op(items[k].op), kb_.op(items[j].op)))
      return j;
    return 0;
  }

  /// A shmem op (lower_shmem.h), not pipelined with its neighbour.
  void emit_shmem(const Op &op) {
    using H = ir::ShmemKind;
    switch (ir::kind_as<H>(op.kind)) {
    case H::ShmemPut:
      lower_put(kb_, op);
      break;
    case H::ShmemGet:
      lower_get(kb_, op);
      break;
    case H::ShmemSignal:
    case H::ShmemWaitUntil:
      lower_signal_wait(kb_, op);
      break;
    case H::ShmemClearData:
      lower_clear(kb_, op);
      break;
    case H::ShmemClearSignal:
      lower_clear_signal(kb_, op);
      break;
    case H::Nop:
      break;
    case H::ShmemFence:
    case H::ShmemQuiet:
      lower_sync(kb_, op);
      break;
    case H::ShmemPutSignal:
      lower_put_signal(kb_, op);
      break;
    case H::ShmemWaitUntilAll:
    case H::ShmemWaitUntilAny:
    case H::ShmemWaitUntilSome:
    case H::ShmemTest:
      lower_wait_set(kb_, op);
      break;
    case H::ShmemAtomicFetchAdd:
    case H::ShmemAtomicSwap:
    case H::ShmemAtomicCompareSwap:
      lower_atomic(kb_, op);
      break;
    }
  }

  /// An op lowered on its own (not fused).
  void emit_op(const Op &op) {
    static_assert(ir::kinds_in(OpFamily::Check) == 1 && ir::kinds_in(OpFamily::Matmul) == 1,
                  "emit_op routes a family of one kind by its family");
    // Standalone compute ops (matmul, movement, axis reductions) get a timeline event; the
    // runtime traces shmem calls itself.
    const auto family = ir::op_info(op.kind).family;
    const bool traced =
        family != OpFamily::Shmem && family != OpFamily::Control && family != OpFamily::Check;
    LV *t0 = traced ? kb_.call_rt(RtFn::TraceNow, {kb_.ctx_arg()}) : nullptr;
    switch (family) {
    case OpFamily::Check:
      emit_check(op);
      break;
    case OpFamily::Control:
      switch (ir::kind_as<ir::ControlKind>(op.kind)) {
      case ir::ControlKind::Loop:
        emit_loop(op);
        break;
      case ir::ControlKind::Paths:
        emit_paths(op);
        break;
      }
      break;
    case OpFamily::Reduce:
      lower_reduce_axis(kb_, op);
      break;
    case OpFamily::Matmul:
      lower_matmul(kb_, op, par_regions_);
      break;
    case OpFamily::Shmem:
      emit_shmem(op);
      break;
    case OpFamily::Standalone:
      lower_standalone(kb_, op);
      break;
    case OpFamily::Library:
      lower_library(kb_, op);
      break;
    case OpFamily::Unary: // fused (lower_fused.h), even alone
    case OpFamily::Binary:
    case OpFamily::Select:
    case OpFamily::Create:
    case OpFamily::Move:
      throw InternalError(op.where, ir::op_info(op.kind).name,
                          "op was not fused and has no standalone lowering (a ptojit bug)");
    }
    if (traced)
      kb_.call_rt(RtFn::TraceOp, {kb_.ctx_arg(), B.getInt32(kb_.site_of(op)), B.getInt32(1), t0});
  }

  /// pto::loop: bounds evaluated once at entry, then an LLVM loop over the body.
  void emit_loop(const Op &op) {
    LV *start = loop_bound(op.start, "start"), *stop = loop_bound(op.stop, "stop");
    LV *step = loop_bound(op.step, "step");
    // A run-time step <= 0 is a RuntimeError at the loop's line (control.h); a concrete one
    // was refused when tracing.
    if (!op.step.is_concrete())
      kb_.check_fail_unless(B.CreateICmpSGT(step, kb_.i64(0)), kb_.current_site(),
                            PTO_ERROR_RUNTIME, loop_step_message(op.step), {step});
    kb_.bind_loop(op.loop_id, start, stop, step);
    kb_.for_loop(
        start, stop, step,
        [&](LV *i) {
          kb_.bind_loop_index(op.loop_id, i);
          emit_region(op.body);
        },
        "loop");
  }

  /// A loop bound evaluated at loop entry: its overflow is a RuntimeError at the loop's line.
  LV *loop_bound(const SymbolicScalar &s, const char *which) {
    LV *over = nullptr;
    LV *v = kb_.sym_checked(s, over);
    if (!s.is_concrete())
      kb_.fail_msg_if(over, PTO_ERROR_RUNTIME, kb_.current_site(), loop_bound_overflow(which, s));
    return v;
  }

  /// PyPTO path dispatch: guards are evaluated at body entry, before any path runs (they are
  /// disjoint by construction); the first that holds runs.
  void emit_paths(const Op &op) {
    auto *done = kb_.block("paths.end");
    for (auto &path : op.paths) {
      kb_.set_current_site(kb_.site_of(op));
      LV *g = kb_.sym(path.guard);
      auto *run = kb_.block("path");
      auto *next = kb_.block("path.next");
      B.CreateCondBr(B.CreateICmpNE(g, kb_.i64(0)), run, next);
      B.SetInsertPoint(run);
      emit_region(path.body);
      B.CreateBr(done);
      B.SetInsertPoint(next);
    }
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// A run-time requirement (OpKind::Check): unless `holds`, pass the evaluated `args` to
  /// pto_rt_check_fail (the interpreter's failure path too) and return its status.
  void emit_check(const Op &op) {
    auto *bad = kb_.block("check.fail");
    auto *cont = kb_.block("check.ok");
    // A condition whose arithmetic overflows is a failure of its own (as in the interpreter):
    // a wrapped offset could land back in range.
    LV *over = nullptr;
    LV *holds = B.CreateICmpNE(kb_.sym_checked(op.holds, over), kb_.i64(0));
    if (!op.holds.is_concrete())
      kb_.fail_msg_if(over, check_error_class(op), kb_.current_site(), check_overflow(op.holds));
    B.CreateCondBr(holds, cont, bad, kb_.likely());
    B.SetInsertPoint(bad);
    std::vector<LV *> args;
    for (const auto &a : op.args)
      args.push_back(kb_.sym(a));
    kb_.ret_check_fail(kb_.current_site(), check_error_class(op), op.message, args);
    B.SetInsertPoint(cont);
  }
};

class LlvmExecutable : public Executable {
public:
  LlvmExecutable(std::unique_ptr<JitModule> m, std::vector<std::string> sites)
      : mod_(std::move(m)) {
    sites_ = std::move(sites);
    fn_ = reinterpret_cast<pto_kernel_fn>(mod_->entry());
    code_bytes = mod_->code_bytes();
  }
  int32_t run(pto_ctx *ctx, void *const *args, const int64_t *dims) const override {
    return fn_(ctx, args, dims);
  }

private:
  std::unique_ptr<JitModule> mod_;
  pto_kernel_fn fn_ = nullptr;
};

} // namespace

namespace {
/// The lowered module of `pp` in `ctx` (which must outlive it).
std::unique_ptr<llvm::Module> lower(const PlannedProgram &pp, const CompileOptions &opts,
                                    llvm::LLVMContext &ctx) {
  auto mod = std::make_unique<llvm::Module>(pp.program.name, ctx);
  Lowering(pp, opts, ctx, *mod).run();
  return mod;
}
} // namespace

std::string lowered_llvm_ir(const PlannedProgram &pp, const CompileOptions &opts) {
  llvm::LLVMContext ctx;
  auto mod = lower(pp, opts, ctx);
  std::string s;
  llvm::raw_string_ostream os(s);
  mod->print(os, nullptr);
  return s;
}

std::string build_llvm_object(const PlannedProgram &pp, const CompileOptions &opts,
                              const StageDump &dump) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = lower(pp, opts, *ctx);
  return jit_emit_object(std::move(ctx), std::move(mod), dump);
}

std::shared_ptr<Executable> link_llvm_executable(const PlannedProgram &pp,
                                                 std::string_view object) {
  auto jm = jit_link_object(object, pp.program.name);
  return std::make_shared<LlvmExecutable>(std::move(jm), pp.sites.names());
}

std::shared_ptr<const Executable>
build_llvm_executable(const PlannedProgram &pp, const CompileOptions &opts, const StageDump &dump) {
  auto t0 = std::chrono::steady_clock::now();
  auto exe = link_llvm_executable(pp, build_llvm_object(pp, opts, dump));
  exe->compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return exe;
}

} // namespace pto::codegen
