// control.h - Traced control flow, as PyPTO `pypto.loop`, `loop_unroll`, `cond`, `is_loop_begin`
// and `is_loop_end` (reference §1.4). A loop is recorded once with a symbolic index, not
// unrolled; a body with symbolic `cond`s is traced once per path.
//
//   for (auto t : pto::loop(recv_counts.at({0}))) {   // data-dependent trip count
//     if (pto::cond(mask.at({t}) == 1)) { ... } else { ... }
//   }
#pragma once

#include "pto/symbolic.h"

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace pto {

/// Options of pto::loop, as PyPTO's keywords.
struct LoopOptions {
  std::string name = {}; ///< the loop's name (PyPTO `name`); messages only
  /// PyPTO `idx_name`: the index's name. Accepted as a hint (issue 13): dumps keep ptojit's
  /// own index names (`i0`, `i1`), which are unique per program as PyPTO requires idx_names to be.
  std::string idx_name = {};
  /// PyPTO `unroll_list` on `loop`: the framework repeats a one-item body k times. ptojit runs
  /// the loop as written (the same results); every factor must be > 0 (ArgumentError).
  std::vector<int64_t> unroll_list = {};
  /// PyPTO `submit_before_loop` (flush pending Ascend work first): accepted; ptojit runs ops in
  /// program order, so every earlier op has run when the loop starts.
  bool submit_before_loop = false;
  /// PyPTO `parallel` (independent iterations): accepted; the loop runs its iterations in
  /// order, which gives the same results for a body whose iterations are independent.
  bool parallel = false;
};

/// The most paths (combinations of symbolic cond outcomes) one loop body may have. More is a
/// CompileError at the body's first cond (a size limit, as kMaxNestedCondPaths, kMaxLoopDepth
/// and PTO_MAX_OPS: catching CompileError catches every "program too big").
inline constexpr int kMaxCondPaths = 64;
/// The most passes the innermost of nested loop bodies with cond paths may be traced: every path
/// of an outer body traces the loops inside it again, so the path counts of a nest multiply (3
/// levels of 8 paths: 512 passes). More is a CompileError at the innermost body's first cond.
inline constexpr int64_t kMaxNestedCondPaths = 256;
/// The most pto::loop levels that may be open at once (nested loops): opening one more is a
/// CompileError at the loop (codegen and the interpreter walk loop bodies one level each).
inline constexpr int kMaxLoopDepth = 64;

/// Ops one kernel may trace (every op call, loop and run-time check; every pass of a loop body
/// with pto::cond paths counts), unless PTO_MAX_OPS sets another limit in [1, 2^30]. Tracing
/// op kMaxKernelOps + 1 is a CompileError at its line naming the kernel and the limit: JIT
/// compile time is about linear in the program's size, a few ms per op (bench/RESULTS.md,
/// "JIT compile time against program size"), so the limit keeps it to minutes. Nesting is bounded
/// by kMaxLoopDepth (and cond paths by kMaxCondPaths per loop body, kMaxNestedCondPaths per nest).
inline constexpr int64_t kMaxKernelOps = 50000;

/// `for (auto i : pto::loop(start, stop, step)) { ... }` records one loop whose index `i` is a
/// run-time SymbolicScalar (start, start+step, ... while < stop). Bounds may be symbolic, including
/// tensor elements (Tensor::at); they are evaluated once, when the loop starts. Throws
/// SymbolicError when `step` is a concrete value <= 0; a run-time step <= 0 fails the call with
/// RuntimeError naming the loop's line and the step's value, when the loop starts (no iteration
/// runs, no result of the loop is written).
/// The loop runs exactly ceil((stop - start) / step) iterations for any int64 bounds (the index
/// never wraps: `loop(INT64_MAX - 2, INT64_MAX, 4)` runs once), in both executors. A bound whose
/// run-time arithmetic (`+`, `-`, `*`, unary `-`) overflows int64 fails the call with
/// RuntimeError naming the loop's line and the bound, before the first iteration.
/// CompileError when kMaxLoopDepth loops are already open around it.
/// Ops traced in the body belong to the loop; tensors created in the body may not be used after
/// it (assemble them into a tensor created outside).
///
/// The body is traced once, or once per path when it calls pto::cond on run-time conditions: the
/// range-for then runs the body again with the same index (as PyPTO's `RecordLoopFunc`) and the
/// loop body becomes one `paths` op. `break` or `return` inside the body is not supported (the
/// body is traced, not run per iteration): leaving it early throws SymbolicError.
class LoopRange {
public:
  LoopRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step, LoopOptions opts,
            std::source_location loc);
  LoopRange(const LoopRange &) = delete;
  LoopRange &operator=(const LoopRange &) = delete;
  /// Throws SymbolicError when the body was left with `break` or `return` (not while unwinding).
  ~LoopRange() noexcept(false);

  class iterator {
  public:
    SymbolicScalar operator*() const;
    iterator &operator++();
    /// Ends a pass of the body; true while the body must be traced (again).
    bool operator!=(const iterator &) const;

  private:
    friend class LoopRange;
    LoopRange *range_ = nullptr;
    mutable bool done_ = false;
  };
  iterator begin();
  iterator end() { return iterator{}; }

private:
  friend class iterator;
  friend class LoopUnrollRange;
  /// Closes the loop if its body is still open; true when it was.
  bool abandon();
  SymbolicScalar start_, stop_, step_, index_;
  LoopOptions opts_;
  std::source_location loc_;
  bool open_ = false;
  int loop_id_ = -1;
  int uncaught_ = 0;
};

/// A loop over [0, stop).
LoopRange loop(SymbolicScalar stop, LoopOptions opts = {},
               std::source_location loc = std::source_location::current());
/// A loop over [start, stop) with step 1.
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, LoopOptions opts = {},
               std::source_location loc = std::source_location::current());
/// A loop over [start, stop) with `step`.
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
               LoopOptions opts = {}, std::source_location loc = std::source_location::current());

/// One step of pto::loop_unroll: the first index of the `k` consecutive items this iteration of
/// the body handles (idx, idx + step, ..., idx + (k-1)·step).
struct UnrollStep {
  SymbolicScalar idx;
  int64_t k = 1;
};

/// `for (auto [idx, k] : pto::loop_unroll(start, stop, step, {4, 2}))`, as PyPTO `loop_unroll`:
/// the factors are de-duplicated and sorted in descending order and 1 is added; for each factor
/// k, in that order, one loop runs from the current start `s` up to
/// `stop - (stop - s) % (step·k)` with step `step·k`, and the next factor starts where it ended,
/// so every item of [start, stop) is handled exactly once (the last loop, k = 1, runs to `stop`
/// like pto::loop). For lists whose factors divide each other (e.g. {8, 4, 2}) this is PyPTO's
/// formula; PyPTO takes `stop - start` with the original start, which can run past `stop` for
/// other lists and drops a last partial step when step > 1. Each sub-loop is a pto::loop (its
/// body is traced once per factor, with `k` a compile-time constant; conds work as in pto::loop).
/// Throws ArgumentError for a factor <= 0 and SymbolicError for a concrete step <= 0; a run-time
/// step <= 0 fails the call with RuntimeError at the loop_unroll's line when the first sub-loop
/// starts (its step `step·k`, or the division by it, is what the message shows).
class LoopUnrollRange {
public:
  LoopUnrollRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                  std::vector<int64_t> factors, std::source_location loc);
  LoopUnrollRange(const LoopUnrollRange &) = delete;
  LoopUnrollRange &operator=(const LoopUnrollRange &) = delete;
  ~LoopUnrollRange() noexcept(false);

  class iterator {
  public:
    UnrollStep operator*() const;
    iterator &operator++();
    bool operator!=(const iterator &) const;

  private:
    friend class LoopUnrollRange;
    LoopUnrollRange *range_ = nullptr;
    mutable bool done_ = false;
  };
  iterator begin();
  iterator end() { return iterator{}; }

  /// The factors in the order their loops run (descending, ending with 1).
  const std::vector<int64_t> &factors() const { return factors_; }

private:
  friend class iterator;
  /// Opens the sub-loops in turn until one is entered; false when all factors are done.
  bool open_next();
  /// Where factor k's loop ends: stop - (stop - cur) % (step·k), exact (no int64 wrap) when the
  /// three are concrete; symbolic otherwise (evaluated with the sub-loop's overflow check).
  SymbolicScalar unroll_end(int64_t k) const;
  /// step * k, saturated to INT64_MAX (then unroll_end gives an empty unrolled loop).
  SymbolicScalar unroll_step(int64_t k) const;
  SymbolicScalar start_, stop_, step_, cur_, sub_stop_;
  std::vector<int64_t> factors_;
  size_t next_factor_ = 0;
  std::unique_ptr<LoopRange> sub_;
  LoopRange::iterator sub_it_;
  std::source_location loc_;
  int uncaught_ = 0;
};

/// `loop_unroll(0, stop, 1, factors)`.
LoopUnrollRange loop_unroll(SymbolicScalar stop, std::vector<int64_t> factors,
                            std::source_location loc = std::source_location::current());
/// `loop_unroll(start, stop, 1, factors)`.
LoopUnrollRange loop_unroll(SymbolicScalar start, SymbolicScalar stop, std::vector<int64_t> factors,
                            std::source_location loc = std::source_location::current());
/// See LoopUnrollRange.
LoopUnrollRange loop_unroll(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                            std::vector<int64_t> factors,
                            std::source_location loc = std::source_location::current());

/// `if (pto::cond(s)) { ... } else { ... }`, as PyPTO `cond`: a concrete `s` is decided now
/// (`s != 0`, no path). A run-time `s` must be inside a pto::loop body (PyPTO wraps kernel code
/// in an implicit `loop(1)`; here write `for (auto _ : pto::loop(1))`, else SymbolicError). The
/// innermost loop's body is then traced once per combination of outcomes (depth-first, true
/// first; `else if` chains and nested conds work), this call returning the outcome of the path
/// being traced. The body becomes one `paths` op: at run time the conditions are evaluated at
/// body entry, before any of its ops run, and the one path whose outcomes all hold runs (as
/// PyPTO's AICPU dispatch). So a condition must not depend on what the same iteration computes:
/// reading (Tensor::at) a tensor created in the body, or written by an op traced earlier in the
/// body, is a SymbolicError. `&`, `|` short-circuit: `pto::cond((i < n) & (x.at({i}) == 1))`
/// reads x only when i < n.
/// Errors: SymbolicError for a body that traces differently when re-run (conditions must depend
/// only on traced values, not on host state that changes between passes); DistributedError for a
/// shmem tensor created in a body with paths, even before the body's first cond (each path
/// would get its own symmetric tensor; wrap the cond in an inner `for (auto _ : pto::loop(1))`
/// after the creation, or create the tensor before the loop and dist::shmem_reset it each
/// iteration); CompileError for more than kMaxCondPaths paths in one body, or
/// when nested bodies' paths multiply past kMaxNestedCondPaths passes of the innermost body.
bool cond(const SymbolicScalar &s, std::source_location loc = std::source_location::current());

/// A run-time 0/1 SymbolicScalar: 1 on the first iteration of the loop whose index is `i`, as
/// PyPTO `is_loop_begin`. Throws ArgumentError ("not loop index", PyPTO's ValueError) when `i` is
/// not the index of a pto::loop enclosing the call.
SymbolicScalar is_loop_begin(const SymbolicScalar &i,
                             std::source_location loc = std::source_location::current());
/// 1 on the last iteration (index + step >= stop) of the loop whose index is `i`, as PyPTO
/// `is_loop_end`. Errors as is_loop_begin.
SymbolicScalar is_loop_end(const SymbolicScalar &i,
                           std::source_location loc = std::source_location::current());

} // namespace pto
