// abi_decls.h - The C ABI between generated code and C++ (pto/runtime/abi.h, rtlib/xops.h,
// rtlib/run_check.h) as LLVM sees it, declared once: every runtime entry point generated code
// calls, with the exact LLVM function type derived from its C declaration and the address the
// JIT binds it to; and the LLVM struct types of the structs generated code builds (pto_block,
// XTensor, XCall), derived from their C++ fields and checked against offsetof. Call sites and the
// JIT's symbol table both read this table, so a signature or layout drift is a build error or an
// InternalError, never a silently wrong call.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>

#include <string>
#include <utility>
#include <vector>

namespace pto::codegen {

// Every runtime entry point of generated code, as (enumerator, C symbol).
#define PTO_RT_ENTRY_POINTS(X)                                                                     \
  X(MyPe, pto_rt_my_pe)                                                                            \
  X(NPes, pto_rt_n_pes)                                                                            \
  X(KernelEnter, pto_rt_kernel_enter)                                                              \
  X(HeapZeroing, pto_rt_heap_zeroing)                                                              \
  X(HeapTable, pto_rt_heap_table)                                                                  \
  X(KernelExit, pto_rt_kernel_exit)                                                                \
  X(HeapBase, pto_rt_heap_base)                                                                    \
  X(Put, pto_rt_put)                                                                               \
  X(Get, pto_rt_get)                                                                               \
  X(Signal, pto_rt_signal)                                                                         \
  X(WaitUntil, pto_rt_wait_until)                                                                  \
  X(Clear, pto_rt_clear)                                                                           \
  X(Fail, pto_rt_fail)                                                                             \
  X(FailMsg, pto_rt_fail_msg)                                                                      \
  X(CheckFail, pto_rt_check_fail)                                                                  \
  X(Xop, pto_rt_xop)                                                                               \
  X(Alloc, pto_rt_alloc)                                                                           \
  X(TraceNow, pto_rt_trace_now)                                                                    \
  X(TraceOp, pto_rt_trace_op)                                                                      \
  X(Fence, pto_rt_fence)                                                                           \
  X(Quiet, pto_rt_quiet)                                                                           \
  X(PutSignal, pto_rt_put_signal)                                                                  \
  X(Atomic, pto_rt_atomic)                                                                         \
  X(WaitUntilSet, pto_rt_wait_until_set)                                                           \
  X(Workers, pto_rt_workers)                                                                       \
  X(ParallelFor, pto_rt_parallel_for)

/// A runtime entry point of generated code (PTO_RT_ENTRY_POINTS).
enum class RtFn {
#define PTO_RT_ENUMERATOR(e, sym) e,
  PTO_RT_ENTRY_POINTS(PTO_RT_ENUMERATOR)
#undef PTO_RT_ENUMERATOR
};

/// The C symbol of `fn` ("pto_rt_put").
const char *rt_name(RtFn fn);
/// The exact LLVM type of `fn`, from its C declaration (int32_t -> i32, pointers -> ptr, ...).
llvm::FunctionType *rt_type(llvm::LLVMContext &c, RtFn fn);
/// Every entry point as {C symbol, address}: what the JIT binds.
std::vector<std::pair<std::string, void *>> rt_symbols();

/// Declares `fn` in `m` with its exact type (once; later calls return the declaration). Throws
/// InternalError (a ptojit bug) when `m` already holds that symbol with another type.
llvm::Function *declare_rt(llvm::Module &m, RtFn fn);
/// Emits a call of `fn` with `args` at `b`'s insert point (in the module of its block). Throws
/// InternalError naming the entry point, the argument and both types (a ptojit bug; nothing is
/// emitted) when the number or a type of `args` differs from the C declaration.
llvm::CallInst *call_rt(llvm::IRBuilderBase &b, RtFn fn, llvm::ArrayRef<llvm::Value *> args);

/// The type of a kernel's entry `pto_kernel` (pto_kernel_fn, abi.h).
llvm::FunctionType *kernel_type(llvm::LLVMContext &c);

// Field indices of the structs generated code fills, in the C++ declaration order and named as
// the C++ fields (so a GEP reads `XCallField::site`). The lists are checked at compile time to
// cover each struct exactly (abi_decls.cpp).
// clang-format off
#define PTO_BLOCK_FIELDS(X) X(extent) X(src_stride) X(dst_stride)
#define PTO_XTENSOR_FIELDS(X) X(base) X(dtype) X(rank) X(shape) X(valid) X(strides)
#define PTO_XCALL_FIELDS(X)                                                                        \
  X(ctx) X(site) X(kind) X(n_inputs) X(n_tensors) X(tensors) X(axis) X(keepdim) X(n_ints) X(ints)  \
  X(n_reals) X(reals) X(has_scalar) X(scalar_i)
// clang-format on

#define PTO_FIELD_ENUMERATOR(f) f,
/// pto_block (abi.h).
enum class BlockField : unsigned { PTO_BLOCK_FIELDS(PTO_FIELD_ENUMERATOR) };
/// XTensor (rtlib/xops.h).
enum class XTensorField : unsigned { PTO_XTENSOR_FIELDS(PTO_FIELD_ENUMERATOR) };
/// XCall (rtlib/xops.h).
enum class XCallField : unsigned { PTO_XCALL_FIELDS(PTO_FIELD_ENUMERATOR) };
#undef PTO_FIELD_ENUMERATOR

/// The LLVM struct types of pto_block, XTensor and XCall in `c` (named "pto_block", "XTensor",
/// "XCall"; one per context), field i of the C++ struct being element i.
llvm::StructType *block_type(llvm::LLVMContext &c);
llvm::StructType *xtensor_type(llvm::LLVMContext &c);
llvm::StructType *xcall_type(llvm::LLVMContext &c);

/// The element index of field `f` in its struct's LLVM type.
template <class Field> constexpr unsigned field_index(Field f) { return static_cast<unsigned>(f); }

/// Address of field `f` of the struct `type` at `base`.
template <class Field>
llvm::Value *field_ptr(llvm::IRBuilderBase &b, llvm::StructType *type, llvm::Value *base, Field f) {
  return b.CreateStructGEP(type, base, field_index(f));
}

/// Checks that the LLVM types above place every field where the C++ compiler does (offsetof,
/// sizeof) under data layout `dl`. Throws InternalError naming the struct and field otherwise.
void check_abi_layouts(const llvm::DataLayout &dl);

} // namespace pto::codegen
