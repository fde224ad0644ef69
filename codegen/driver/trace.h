// trace.h - The pipeline's first stage: a kernel's function, called on symbolic tensors, traced
// into an ir::Program (pto::jit does it for each new signature; tests and tools call it to get
// the program a kernel compiles, without running it).
#pragma once

#include "pto/dtype.h"
#include "pto/ir/program.h"
#include "pto/tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pto::detail {

/// What a trace depends on besides the traced function.
struct TraceInput {
  std::string name;             ///< the kernel's name (the program's)
  std::vector<DataType> dtypes; ///< per tensor parameter
  /// Per tensor parameter, per dim: its size, or pto::DYNAMIC for a dim known only at run time
  /// (an InputDim symbol `arg<p>.shape[<i>]`).
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> constants; ///< non-tensor parameters, printed
  int world_pes = 1;                  ///< PEs running the kernel
  std::map<std::string, int> groups;  ///< the runtime's groups and their sizes
};

struct Traced {
  ir::Program program;
  /// The groups the trace looked up and their sizes then (0: no such group): the program is
  /// valid only while each still has that size.
  std::map<std::string, int> groups_looked_up;
};

/// Traces `fn` on one tensor parameter per `in.dtypes` entry (named arg0, arg1, ...). Deferred
/// collectives (allreduce fusion) are traced when `fn` returns. Throws what tracing throws (the
/// user's errors, at their lines).
Traced trace_program(const TraceInput &in,
                     const std::function<void(const std::vector<Tensor> &)> &fn);

} // namespace pto::detail
