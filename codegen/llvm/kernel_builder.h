// kernel_builder.h - The state and helpers every part of the LLVM lowering shares while it builds
// one kernel function
//   i32 @pto_kernel(ptr ctx, ptr args, ptr dims)
// the IRBuilder and module, the kernel's arguments, the site numbers, the symbolic-scalar
// evaluator (sym, sym_checked), the addresses of values in memory (addr), the run-time failure
// paths (fail_unless, fail_msg_if, ret_if_error), entry-block allocas, counted loops and calls into
// the runtime (call_rt). The lowering of each op family (lower_*.cpp) takes a KernelBuilder&; none
// keeps a copy of this state. Lowerings name the builder `B`, as LLVM's own code does.
#pragma once

#include "pto/ir/program.h"
#include "pto/runtime/abi.h"

#include "llvm/abi_decls.h"
#include "llvm/host_target.h"
#include "passes/compile.h"
#include "passes/sites.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pto::codegen {

/// Element 0 of a value's window and its root's row-major element strides (i64).
struct Addr {
  llvm::Value *base = nullptr;
  std::vector<llvm::Value *> strides;
};

class KernelBuilder {
public:
  /// Builds the kernel of `p`, whose ops `sites` numbers (PlannedProgram::sites).
  KernelBuilder(const ir::Program &p, const SiteTable &sites, const CompileOptions &opts,
                llvm::LLVMContext &c, llvm::Module &m);

  /// Creates `i32 name(ptr ctx, ptr args, ptr dims)` for the host CPU, with an entry block that
  /// holds only allocas, and leaves the builder at the start of the body.
  llvm::Function *begin_function(const char *name);

  // ---- what is being built -------------------------------------------------------------------
  const ir::Program &program() const { return p_; }
  const ir::Value &value(ir::ValueId id) const { return p_.value(id); }
  const CompileOptions &options() const { return opts_; }
  llvm::IRBuilder<> &builder() { return B; }
  llvm::Module &module() { return M; }
  llvm::LLVMContext &context() { return C; }
  llvm::Function *function() const { return F; }
  /// The kernel's pto_ctx* argument, passed to every runtime call.
  llvm::Value *ctx_arg() const { return ctx_; }
  /// W, the lanes of the fused passes' vectors (CompileOptions::vector_lanes).
  int lanes() const { return W; }
  /// The vector level of the CPU the code is compiled for (host_target()): it chooses SLEEF
  /// variants (vector_math.h) and intrinsics.
  Isa isa() const;

  // ---- sites: the index into the site table of the op a run-time failure is reported at -----
  // An op's site is its id (passes/sites.h), numbered once by the pipeline.
  int site_of(const ir::Op &op) const { return sites_.of(op); }
  /// The op with id `id` (the fusion plan names ops by id).
  const ir::Op &op(OpId id) const { return sites_.op(id); }
  /// The site of the first op that outputs `id`, or -1.
  int def_site(ir::ValueId id) const { return sites_.def_site(id); }
  int current_site() const { return cur_site_; }
  void set_current_site(int site) { cur_site_ = site; }

  // ---- symbolic scalars (lower_symbolic.cpp) -------------------------------------------------
  /// `s` as an i64. Tensor-element reads are bounds-checked, divisions by zero fail the call at
  /// the current site; `&`, `|` and ternary evaluate only the operands that decide the result
  /// when the others could fail, as the interpreter does.
  llvm::Value *sym(const SymbolicScalar &s);
  /// sym(s), plus an i1 in `over` that is true when any +, -, *, unary - or / of s overflowed
  /// int64 (as evaluate(..., &overflow) in the interpreter).
  llvm::Value *sym_checked(const SymbolicScalar &s, llvm::Value *&over);
  /// What the symbols of loop `loop_id` (its index, first and last iteration) evaluate to.
  void bind_loop(int64_t loop_id, llvm::Value *start, llvm::Value *stop, llvm::Value *step);
  void bind_loop_index(int64_t loop_id, llvm::Value *index) { loop_index_[loop_id] = index; }
  /// What my_pe() of group `group` evaluates to.
  void bind_my_pe(int64_t group, llvm::Value *pe) { my_pe_[group] = pe; }

  // ---- values in memory ----------------------------------------------------------------------
  /// Gives local `id` its buffer (a materialized value).
  void set_storage(ir::ValueId id, llvm::Value *buffer) { storage_[id] = buffer; }
  /// The heap base table of the kernel's group `group` (an entry-block [n_pes x ptr] array
  /// that pto_rt_heap_table fills once per kernel entry: bind_heap_tables, lower_shmem.h), or
  /// null before it is bound.
  void set_heap_table(int group, llvm::Value *table) { heap_tables_[group] = table; }
  llvm::Value *heap_table(int group) const {
    auto it = heap_tables_.find(group);
    return it == heap_tables_.end() ? nullptr : it->second;
  }
  /// Address of a value's window (views resolved to their root; a symbolic window is checked to
  /// lie inside its root once, here, failing the call with PTO_FAIL_VIEW_BOUNDS).
  Addr addr(ir::ValueId id);
  /// Element pointer of index `idx` in window `a` of a `dt` value.
  llvm::Value *elem_ptr(const Addr &a, DataType dt, const std::vector<llvm::Value *> &idx);
  /// A valid extent clamped to [0, dim] (a valid shape may exceed its dim or be negative).
  llvm::Value *clamp_valid(llvm::Value *valid, llvm::Value *dim);
  /// Row-major element strides of a dense buffer of `shape`.
  std::vector<llvm::Value *> strides_of(const std::vector<SymbolicScalar> &shape);
  /// The bytes of a dense buffer of run-time `shape` with `esize`-byte elements (negative dims
  /// count as empty); fails the call with ShapeError `detail` at `site` when a dim overflows or
  /// the size, zero dims counted as 1, passes 2^62 bytes (dense_bytes in pto/size_math.h).
  llvm::Value *checked_bytes(const std::vector<SymbolicScalar> &shape, int64_t esize,
                             const std::string &detail, int site);

  // ---- control flow --------------------------------------------------------------------------
  /// A new basic block at the end of the function.
  llvm::BasicBlock *block(const llvm::Twine &name);
  /// for (i = start; i < end; i += step) body(i), through emit_for_loop (llvm_loops.h).
  void for_loop(llvm::Value *start, llvm::Value *end, llvm::Value *step,
                const std::function<void(llvm::Value *)> &body, const char *name = "i");
  /// if (cond) then(), in new blocks `then_name` and `end_name`; leaves the builder in the latter.
  void if_then(llvm::Value *cond, const std::function<void()> &then, const llvm::Twine &then_name,
               const llvm::Twine &end_name);
  /// if (cond) then() else otherwise(), in new blocks `then_name`, `else_name` and `join_name`;
  /// leaves the builder in the last.
  void if_else(llvm::Value *cond, const std::function<void()> &then,
               const std::function<void()> &otherwise, const llvm::Twine &then_name,
               const llvm::Twine &else_name, const llvm::Twine &join_name);
  /// Ends the current block with a branch to `join` and returns, at the start of `join`, the phi
  /// of `a` (from block `from`) and `b` (from the block just ended).
  llvm::Value *join_phi(llvm::BasicBlock *join, llvm::Value *a, llvm::BasicBlock *from,
                        llvm::Value *b);
  /// Returns `status` (i32) from the kernel when it is non-zero.
  void ret_if_error(llvm::Value *status);
  /// Calls pto_rt_fail(kind, current site, a, b) and returns its status when `ok` is false.
  void fail_unless(llvm::Value *ok, pto_fail_kind kind, llvm::Value *a, llvm::Value *b);
  /// Calls pto_rt_fail_msg(error_class, site, detail) and returns its status when `bad` is true.
  void fail_msg_if(llvm::Value *bad, int32_t error_class, int site, const std::string &detail);
  llvm::MDNode *likely();
  llvm::MDNode *unlikely();

  // ---- values --------------------------------------------------------------------------------
  llvm::Value *i64(int64_t v) { return B.getInt64(static_cast<uint64_t>(v)); }
  llvm::Value *smin(llvm::Value *a, llvm::Value *b);
  llvm::Value *smax(llvm::Value *a, llvm::Value *b);
  /// <W x elem>.
  llvm::VectorType *vec_type(llvm::Type *elem);
  /// `s` in all W lanes.
  llvm::Value *splat(llvm::Value *s);
  /// An alloca in the entry block (once per call, whatever loop the caller is in).
  llvm::Value *entry_alloca(llvm::Type *t, const char *name);

  // ---- the runtime ---------------------------------------------------------------------------
  /// Calls runtime entry point `fn` with `args` at the builder's insertion point, declared with
  /// its C type (abi_decls.h). Throws InternalError when `args` do not match that type.
  llvm::Value *call_rt(RtFn fn, llvm::ArrayRef<llvm::Value *> args);
  /// The same call, emitted in the entry block (once per call of the kernel).
  llvm::Value *call_rt_in_entry(RtFn fn, llvm::ArrayRef<llvm::Value *> args);

private:
  friend class SymEmitter; // lower_symbolic.cpp

  struct LoopBounds {
    llvm::Value *start = nullptr, *stop = nullptr, *step = nullptr; ///< as evaluated at entry
  };

  /// if_then (otherwise null) and if_else.
  void branch(llvm::Value *cond, const std::function<void()> &then,
              const std::function<void()> *otherwise, const llvm::Twine &then_name,
              const llvm::Twine *else_name, const llvm::Twine &join_name);
  // lower_symbolic.cpp
  llvm::Value *symbol_value(const SymExpr &e, const std::vector<llvm::Value *> &idx);
  llvm::Value *sym_op(SymOp op, const std::vector<llvm::Value *> &a);
  llvm::Value *arith(llvm::Intrinsic::ID id, llvm::Value *a, llvm::Value *b);
  void note_overflow(llvm::Value *bit);
  llvm::Value *read_element(const SymExpr &e, const std::vector<llvm::Value *> &idx);
  llvm::Value *base_of(const ir::Value &root);

  const ir::Program &p_;
  const SiteTable &sites_;
  const CompileOptions &opts_;
  llvm::LLVMContext &C;
  llvm::Module &M;
  llvm::IRBuilder<> B;
  const int W;
  llvm::Function *F = nullptr;
  llvm::Value *ctx_ = nullptr, *args_ = nullptr, *dims_ = nullptr;
  llvm::Instruction *alloca_point_ = nullptr;
  int cur_site_ = 0;
  std::map<int64_t, llvm::Value *> loop_index_;
  std::map<int64_t, LoopBounds> loop_bounds_;
  std::map<int64_t, llvm::Value *> my_pe_;
  std::map<ir::ValueId, llvm::Value *> storage_; // materialized locals
  std::map<int, llvm::Value *> heap_tables_;     // by group index
  llvm::Value *overflow_ = nullptr;      // while sym_checked runs: its i1 flag slot, else null
  llvm::Value *overflow_slot_ = nullptr; // that slot (an entry-block alloca), made once
};

} // namespace pto::codegen
