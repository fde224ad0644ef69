// recorder.h - The tracing recorder: while a pto::jit kernel is traced, the calling thread has
// one Recorder that every op appends to. Internal to ptojit (ops, loops, jit), not user API.
#pragma once

#include "pto/error.h"
#include "pto/ir/program.h"
#include "pto/tensor.h"

#include <map>
#include <source_location>
#include <string>
#include <vector>

namespace pto::ir {

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
  /// Adds a value (its id and region are set here) and returns its id.
  ValueId add_value(Value v);
  Tensor tensor(ValueId id) const { return Tensor(&prog_, id); }
  /// Appends an op to the innermost open loop body (or the kernel body).
  void emit(Op op);
  /// Checks that `t` belongs to this trace and is visible here; returns its id.
  ValueId use(const Tensor &t, const char *op, const std::source_location &loc) const;

  /// Loops: open appends a Loop op and makes its body current; close returns to the parent.
  SymbolicScalar open_loop(Op loop_op);
  void close_loop();
  int current_region() const { return regions_.back(); }

  TileShape vec_tile;
  /// The cube tile matmul captures (set_cube_tile_shapes, matmul.h): cube empty when none is set.
  TileShape cube_tile;
  /// Set by pto::jit before tracing: the number of PEs running the kernel and the sizes of the
  /// groups the runtime knows, so that collectives can unroll their PE loops at trace time.
  int world_n_pes = 1;
  std::map<std::string, int> known_groups;
  /// Group table: index of `group`, registering it (checks name length and n_pes).
  int group_index(const std::string &group, int n_pes, const char *op,
                  const std::source_location &loc);

private:
  Program prog_;
  std::vector<std::vector<Op> *> scopes_;
  std::vector<int> regions_{0};
  std::vector<int> region_parent_{-1};
  Recorder *prev_ = nullptr;
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
