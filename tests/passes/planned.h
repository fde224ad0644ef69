// planned.h - The pipeline up to the backend, on a kernel function, for the pass tests: trace
// (driver/trace.h) then compile_program with no backend (passes/pipeline.h). Nothing runs.
#pragma once

#include "driver/trace.h"
#include "passes/pipeline.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace passes_test {

/// A tensor parameter: its dtype and dims (pto::DYNAMIC for a run-time dim).
struct Param {
  pto::DataType dtype = pto::DT_FP32;
  std::vector<int64_t> dims;
};

using KernelFn = std::function<void(const std::vector<pto::Tensor> &)>;

/// Traces `fn` as kernel `name` on `params` (with `world_pes` PEs) and plans it.
inline pto::codegen::Compiled plan(const std::string &name, const std::vector<Param> &params,
                                   const KernelFn &fn, int world_pes = 1) {
  pto::detail::TraceInput in;
  in.name = name;
  in.world_pes = world_pes;
  for (const Param &p : params) {
    in.dtypes.push_back(p.dtype);
    in.dims.push_back(p.dims);
  }
  auto traced = pto::detail::trace_program(in, fn);
  return pto::codegen::compile_program(std::move(traced.program), pto::codegen::CompileOptions{});
}

} // namespace passes_test
