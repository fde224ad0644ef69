// recorder.h - The tracing recorder: while a pto::jit kernel is traced, the calling thread has
// one Recorder that every op appends to. Internal to ptojit (ops, loops, jit), not user API.
#pragma once

#include "pto/error.h"
#include "pto/ir/program.h"
#include "pto/tensor.h"

#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace pto::ir {

class Recorder;
struct LoopFrame;

/// Work traced later than the call that asks for it: allreduce fusion (collectives.cpp) records
/// fusable allreduce calls and traces each group of them as one packed exchange. The owner
/// decides *what* is traced; the recorder decides *when*, by calling flush():
///  - flush(root) before it emits the next op, once an op has used (read or written, through
///    any view) a value whose storage root `watches(root)` (a deferred result or input);
///  - flush(kNoValue), i.e. everything, before it emits a shmem op (puts, signals, waits,
///    barriers, hence every collective), when a loop opens or closes, and when tracing ends
///    (Recorder::flush_deferred).
/// flush() appends to the current scope, which is the scope of the deferred calls: every
/// recorder method that opens or closes a scope must call flush_deferred() first. The recorder
/// never calls flush() re-entrantly: ops that flush() traces do not trigger flushes.
class DeferredWork {
public:
  virtual ~DeferredWork() = default;
  /// True when `root` (a value that is not a View) holds a pending result or input.
  virtual bool watches(ValueId root) const = 0;
  /// Traces the pending work that watches `root`, or all pending work for kNoValue.
  virtual void flush(Recorder &r, ValueId root) = 0;
};

class Recorder {
public:
  explicit Recorder(std::string kernel_name);
  ~Recorder();
  Recorder(const Recorder &) = delete;
  Recorder &operator=(const Recorder &) = delete;

  /// The calling thread's recorder. Throws Error naming `op` when no kernel is being traced.
  static Recorder &current(const char *op, const std::source_location &loc);
  static Recorder *current_or_null();

  Program &program() { return prog_; }
  const Program &program() const { return prog_; }
  /// Adds a value (its id and region are set here) and returns its id.
  ValueId add_value(Value v);
  Tensor tensor(ValueId id) const { return Tensor(&prog_, id); }
  /// Appends an op to the innermost open loop body (or the kernel body). Checks the run-time
  /// symbols of its attributes and operands (check_symbols), and that its outputs' shapes do not
  /// depend on tensor elements or loop positions (ShapeError).
  void emit(Op op);
  /// Adds a Check op (a run-time requirement, shape_rules.h) to the innermost open loop body (or
  /// the kernel body): at its front, after the checks already there, so it runs before any op
  /// of the body touches memory; in program order instead when it reads a tensor element (read
  /// where it was traced). A check whose `holds` is already required at the front is dropped.
  /// Checks its symbols as emit does.
  void emit_check(Op op);
  /// Checks that `t` belongs to this trace and is visible here; returns its id. When `t`'s
  /// storage is watched by `deferred`, that work is traced before the next op is emitted.
  ValueId use(const Tensor &t, const char *op, const std::source_location &loc) const;

  /// Deferred work (see DeferredWork); collectives.cpp installs it on first use.
  std::unique_ptr<DeferredWork> deferred;
  /// Traces the deferred work that watches `root` now (all of it for kNoValue). Called by
  /// pto::jit when the traced function returns, and by every scope change.
  void flush_deferred(ValueId root = kNoValue);
  /// The op list ops are appended to now (identity only: deferred work checks it is flushed
  /// into the scope it was recorded in).
  const std::vector<Op> *current_scope() const { return scopes_.back(); }
  /// The op emit() appended last to the current scope (null when it is empty), for the
  /// front-ends that set internal attributes after emitting (collectives' borrowed gets).
  Op *last_emitted() { return scopes_.back()->empty() ? nullptr : &scopes_.back()->back(); }

  /// Checks that every symbol of `s` can be evaluated here: tensor elements of this trace whose
  /// tensor is visible, indices and positions of open loops. SymbolicError naming `op` otherwise.
  void check_symbols(const SymbolicScalar &s, const char *op,
                     const std::source_location &loc) const;

  /// Loops (control.h): open_loop appends a Loop op to the current scope and starts the first
  /// pass over its body; it returns the index symbol. close_loop ends a pass: true when the body
  /// must be traced again (the next cond path), false when the loop is closed (its body is the
  /// pass's ops, or one Paths op when the body called cond on run-time values).
  SymbolicScalar open_loop(Op loop_op);
  bool close_loop();
  /// Closes loop `loop_id` and the loops opened inside it, unfinished (after an exception or a
  /// body left early).
  void abandon_loop(int loop_id);
  /// True while the body of loop `loop_id` is being traced.
  bool loop_open(int loop_id) const;
  /// The Loop op of loop `loop_id` while its body is being traced (its bounds), else nullptr.
  const Op *open_loop_op(int loop_id) const;
  /// True while tracing a loop body that may run more than once per kernel call: some open
  /// loop's trip count is not a concrete value <= 1 (PyPTO's implicit `loop(1)` does not count).
  bool body_may_repeat() const;
  /// pto::cond on a run-time condition: the outcome of the path being traced (see control.h).
  bool cond(const SymbolicScalar &c, const std::source_location &loc);
  int current_region() const { return regions_.back(); }

  TileShape vec_tile;
  /// The cube tile matmul captures (set_cube_tile_shapes, matmul.h): cube empty when none is set.
  TileShape cube_tile;
  /// Set by pto::jit before tracing: the number of PEs running the kernel and the sizes of the
  /// groups the runtime knows, so that collectives can unroll their PE loops at trace time.
  int world_n_pes = 1;
  std::map<std::string, int> known_groups;
  /// The size of group `name` as the runtime knows it (world_n_pes for "world"), 0 when it has
  /// no such group. Notes the answer in `groups_looked_up`: the program depends on it, so
  /// pto::jit reuses the program only while every group it looked up has the same size.
  int known_group_size(const std::string &name);
  std::map<std::string, int> groups_looked_up;
  /// Group table: index of `group`, registering it (checks name length and n_pes).
  int group_index(const std::string &group, int n_pes, const char *op,
                  const std::source_location &loc);

private:
  void start_pass(LoopFrame &f);
  void check_op(const Op &op) const;
  /// Counts one more op of the program (every pass of a loop body counts): CompileError at the
  /// op's line when the kernel passes kMaxKernelOps (PTO_MAX_OPS), see control.h.
  void count_op(const Op &op);
  void check_cond_inputs(const LoopFrame &f, const SymbolicScalar &c,
                         const std::source_location &loc) const;

  Program prog_;
  std::vector<std::vector<Op> *> scopes_;
  std::vector<int> regions_{0};
  std::vector<int> region_parent_{-1};
  std::vector<int> region_loop_{-1}; ///< per region: the loop whose body pass it is, or -1
  std::vector<std::unique_ptr<LoopFrame>> frames_; ///< open loops, outermost first
  Recorder *prev_ = nullptr;
  /// Watched roots used since the last flush (use() is const: it only notes them).
  mutable std::vector<ValueId> deferred_used_;
  bool flushing_ = false;
  int64_t n_ops_ = 0;   ///< ops traced so far (count_op)
  int64_t max_ops_ = 0; ///< the limit, read from PTO_MAX_OPS at the first op
  friend class RecorderAccess;

public:
  /// True when region `inner` is `outer` or nested in it.
  bool region_within(int inner, int outer) const;
};

/// The tile the next op captures; throws TileShapeError when none is set or its rank is below
/// `out_rank`.
TileShape capture_tile(const Recorder &r, size_t out_rank, const char *op,
                       const std::source_location &loc);

} // namespace pto::ir
