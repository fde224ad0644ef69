// trace.cpp - See trace.h.
#include "driver/trace.h"

#include "pto/ir/recorder.h"
#include "pto/jit.h"

#include <fmt/format.h>

namespace pto::detail {

Traced trace_program(const TraceInput &in,
                     const std::function<void(const std::vector<Tensor> &)> &fn) {
  ir::Recorder rec(in.name);
  rec.world_n_pes = in.world_pes;
  rec.known_groups = in.groups;
  auto &prog = rec.program();
  std::vector<Tensor> params;
  for (size_t p = 0; p < in.dtypes.size(); ++p) {
    ir::Value v;
    v.kind = ir::ValueKind::Param;
    v.dtype = in.dtypes[p];
    v.param_index = static_cast<int>(p);
    v.name = "arg" + std::to_string(p);
    for (size_t i = 0; i < in.dims[p].size(); ++i) {
      if (in.dims[p][i] == DYNAMIC)
        v.shape.push_back(SymbolicScalar::symbol(SymKind::InputDim, static_cast<int64_t>(p),
                                                 static_cast<int64_t>(i),
                                                 fmt::format("arg{}.shape[{}]", p, i)));
      else
        v.shape.emplace_back(in.dims[p][i]);
    }
    v.valid = v.shape;
    ir::ValueId id = rec.add_value(std::move(v));
    prog.params.push_back(id);
    params.push_back(rec.tensor(id));
  }
  for (auto &c : in.constants)
    prog.constants.push_back(ir::ConstParam{c});
  fn(params);
  rec.flush_deferred(); // deferred collectives (allreduce fusion) end with the trace
  return {std::move(prog), rec.groups_looked_up};
}

} // namespace pto::detail
