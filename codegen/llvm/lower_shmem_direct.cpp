// lower_shmem_direct.cpp - See lower_shmem_direct.h, and bind_heap_tables (lower_shmem.h): the
// kernel-entry table that the direct path of puts, gets, signals and waits reads.
#include "llvm/lower_shmem_direct.h"

#include "pto/runtime/abi.h"

#include "llvm/abi_decls.h"
#include "llvm/lower_shmem.h"

#include <algorithm>
#include <set>

namespace pto::codegen {

using ir::Op;
using ir::OpKind;
using LV = llvm::Value;

namespace {

/// Entry `k` of the heap table of `s`'s group (lower_shmem_direct.h: [2 * n_pes + 2 x ptr]).
LV *table_entry(KernelBuilder &kb, LV *table, LV *k, const char *name) {
  auto &B = kb.builder();
  return B.CreateLoad(B.getPtrTy(), B.CreateGEP(B.getPtrTy(), table, k), name);
}

void bump_progress(KernelBuilder &kb, LV *table, int n_pes) {
  auto &B = kb.builder();
  LV *counter = table_entry(kb, table, kb.i64(2 * int64_t(n_pes)), "progress");
  B.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, B.getInt64(1), llvm::MaybeAlign(8),
                    llvm::AtomicOrdering::Monotonic);
}

LV *compare(llvm::IRBuilder<> &B, int32_t cmp, LV *v, LV *want) {
  switch (cmp) {
  case PTO_CMP_EQ:
    return B.CreateICmpEQ(v, want);
  case PTO_CMP_NE:
    return B.CreateICmpNE(v, want);
  case PTO_CMP_LT:
    return B.CreateICmpSLT(v, want);
  case PTO_CMP_LE:
    return B.CreateICmpSLE(v, want);
  case PTO_CMP_GT:
    return B.CreateICmpSGT(v, want);
  default:
    return B.CreateICmpSGE(v, want);
  }
}

} // namespace

void emit_direct_signal(KernelBuilder &kb, const ir::ShmemInfo &s, LV *pe, LV *slot_off,
                        int32_t abi_op, int32_t value, const RuntimeCall &runtime) {
  auto &B = kb.builder();
  LV *table = kb.heap_table(s.group_index);
  if (!table) {
    kb.ret_if_error(runtime());
    return;
  }
  LV *p = B.CreateSExt(pe, B.getInt64Ty());
  LV *in = B.CreateAnd(B.CreateICmpSGE(p, kb.i64(0)), B.CreateICmpSLT(p, kb.i64(s.n_pes)));
  LV *idx = B.CreateSelect(in, p, kb.i64(0));
  LV *flag = B.CreateSelect(in, table_entry(kb, table, B.CreateAdd(idx, kb.i64(s.n_pes)), "sleep"),
                            llvm::ConstantPointerNull::get(B.getPtrTy()));
  kb.if_else(
      B.CreateIsNotNull(flag),
      [&] {
        LV *word = B.CreateGEP(B.getInt8Ty(), table_entry(kb, table, idx, "heap.base"), slot_off);
        if (abi_op == PTO_ATOMIC_SET)
          B.CreateAlignedStore(B.getInt32(static_cast<uint32_t>(value)), word, llvm::MaybeAlign(4))
              ->setAtomic(llvm::AtomicOrdering::Release);
        else
          B.CreateAtomicRMW(llvm::AtomicRMWInst::Add, word,
                            B.getInt32(static_cast<uint32_t>(value)), llvm::MaybeAlign(4),
                            llvm::AtomicOrdering::AcquireRelease);
        B.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
        auto *up = B.CreateAlignedLoad(B.getInt32Ty(), flag, llvm::MaybeAlign(4), "sleeping");
        up->setAtomic(llvm::AtomicOrdering::Monotonic);
        kb.if_then(
            B.CreateICmpNE(up, B.getInt32(0)),
            [&] {
              // Adds 0 to the slot (changes nothing), fences and rings the sleeping PE.
              kb.ret_if_error(
                  kb.call_rt(RtFn::Signal, {kb.ctx_arg(), B.getInt32(s.group_index), pe, slot_off,
                                            B.getInt32(PTO_ATOMIC_ADD), B.getInt32(0),
                                            B.getInt32(kb.current_site())}));
            },
            "signal.wake", "signal.woken");
        bump_progress(kb, table, s.n_pes);
      },
      [&] { kb.ret_if_error(runtime()); }, "signal.direct", "signal.runtime", "signal.done");
}

void emit_direct_wait(KernelBuilder &kb, const ir::ShmemInfo &s, LV *slot_off, int32_t abi_cmp,
                      int32_t value, bool clear, const RuntimeCall &runtime) {
  auto &B = kb.builder();
  LV *table = kb.heap_table(s.group_index);
  if (!table) {
    kb.ret_if_error(runtime());
    return;
  }
  LV *own = table_entry(kb, table, kb.i64(2 * int64_t(s.n_pes) + 1), "own.base");
  LV *want = B.getInt32(static_cast<uint32_t>(value));
  llvm::BasicBlock *poll = kb.block("wait.poll"), *next = kb.block("wait.next"),
                   *hit = kb.block("wait.hit"), *slow = kb.block("wait.runtime"),
                   *done = kb.block("wait.done");
  llvm::BasicBlock *from = B.GetInsertBlock();
  B.CreateCondBr(B.CreateIsNotNull(own), poll, slow);
  // poll: v = load acquire; if (v cmp value) hit; else if (++i < kDirectWaitPolls) poll; else slow
  B.SetInsertPoint(poll);
  auto *i = B.CreatePHI(B.getInt64Ty(), 2, "wait.i");
  i->addIncoming(kb.i64(0), from);
  LV *word = B.CreateGEP(B.getInt8Ty(), own, slot_off);
  auto *v = B.CreateAlignedLoad(B.getInt32Ty(), word, llvm::MaybeAlign(4), "slot");
  v->setAtomic(llvm::AtomicOrdering::Acquire);
  B.CreateCondBr(compare(B, abi_cmp, v, want), hit, next);
  B.SetInsertPoint(next);
  LV *i1 = B.CreateAdd(i, kb.i64(1));
  i->addIncoming(i1, next);
  B.CreateCondBr(B.CreateICmpSLT(i1, kb.i64(kDirectWaitPolls)), poll, slow);
  B.SetInsertPoint(hit);
  if (clear) { // as pto_rt_wait_until: an ADD landing between the load and the clear is kept
    LV *minus = abi_cmp == PTO_CMP_GE ? static_cast<LV *>(want) : static_cast<LV *>(v);
    B.CreateAtomicRMW(llvm::AtomicRMWInst::Sub, word, minus, llvm::MaybeAlign(4),
                      llvm::AtomicOrdering::AcquireRelease);
  }
  bump_progress(kb, table, s.n_pes);
  B.CreateBr(done);
  B.SetInsertPoint(slow);
  kb.ret_if_error(runtime());
  B.CreateBr(done);
  B.SetInsertPoint(done);
}

void bind_heap_tables(KernelBuilder &kb, const ir::Program &p) {
  auto &B = kb.builder();
  // Per group, the data the kernel may store into directly (SET puts into zeroed tensors), the
  // signal words it may store into directly (of every shmem it signals), and everything past
  // zero_bytes (for later kernels whose layouts zero it).
  std::vector<std::vector<int64_t>> ranges(p.groups.size());
  std::vector<std::set<int64_t>> seen(p.groups.size());
  auto add = [&](int group, int64_t offset, int64_t bytes) {
    if (bytes > 0 && seen.at(static_cast<size_t>(group)).insert(offset).second)
      ranges[static_cast<size_t>(group)].insert(ranges[static_cast<size_t>(group)].end(),
                                                {offset, bytes});
  };
  std::function<void(const std::vector<Op> &)> scan = [&](const std::vector<Op> &ops) {
    for (const Op &op : ops) {
      scan(op.body);
      for (const auto &path : op.paths)
        scan(path.body);
      if (op.shmem < 0)
        continue;
      const auto &s = p.shmems.at(static_cast<size_t>(op.shmem));
      if ((op.kind == OpKind::ShmemPut || op.kind == OpKind::ShmemPutSignal) &&
          op.atomic == ir::Atomic::Set && s.zero_data)
        add(s.group_index, s.data_offset_bytes, s.data_bytes);
      if (op.kind == OpKind::ShmemSignal || op.kind == OpKind::ShmemPutSignal ||
          op.kind == OpKind::ShmemWaitUntil)
        add(s.group_index, s.signal_offset_bytes, s.signal_bytes);
    }
  };
  scan(p.body);
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const ir::Group &grp = p.groups[g];
    auto &r = ranges[g];
    if (grp.heap_bytes > grp.zero_bytes)
      r.insert(r.end(), {grp.zero_bytes, grp.heap_bytes - grp.zero_bytes});
    // The bases, the sleep flags, the progress counter, the own base (pto_rt_heap_table).
    auto *table_ty = llvm::ArrayType::get(B.getPtrTy(), 2 * static_cast<uint64_t>(grp.n_pes) + 2);
    LV *table = kb.entry_alloca(table_ty, "heap_table");
    auto *ranges_ty = llvm::ArrayType::get(B.getInt64Ty(), std::max<size_t>(r.size(), 1));
    LV *rs = kb.entry_alloca(ranges_ty, "heap_ranges");
    for (size_t k = 0; k < r.size(); ++k)
      B.CreateStore(kb.i64(r[k]), B.CreateConstGEP2_64(ranges_ty, rs, 0, k));
    kb.ret_if_error(
        kb.call_rt(RtFn::HeapTable, {kb.ctx_arg(), B.getInt32(static_cast<int>(g)),
                                     B.getInt32(static_cast<int>(r.size() / 2)), rs, table}));
    kb.set_heap_table(static_cast<int>(g), table);
  }
}

} // namespace pto::codegen
