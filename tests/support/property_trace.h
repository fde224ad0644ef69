// property_trace.h - Traces a generated program (property_gen.h) into the kernel being traced:
// one DSL call per node, with the node's vec and cube tiles, then an assemble of every output
// node into its kernel parameter. Shared by the property suite and the fuzz target.
#pragma once

#include "pto/tensor.h"

#include "support/property_gen.h"

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace prop {

/// Thrown by the tracer (not by ptojit) when a DSL call returned something the program cannot
/// go on with (e.g. a split into fewer pieces than the node takes): ptojit accepted a parameter
/// the generator expected it to refuse.
struct Unexpected : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The DSL call for node `n` of `p` (its operands already traced into `t`, indexed by node).
/// Sets the node's cube tile first for a matmul. Throws whatever the DSL throws, or Unexpected.
pto::Tensor trace_op(const Program &p, const Node &n, const std::vector<pto::Tensor> &t);

/// Traces program `p` into the current kernel: its inputs are params[next...], in order, then
/// one output parameter per output node (assembled at offset 0 with the node's out_tile);
/// `next` ends past the last parameter used. Sets each node's vec tile before its call.
void trace_program(const Program &p, const std::vector<pto::Tensor> &params, size_t &next);

} // namespace prop
