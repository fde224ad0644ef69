// lower_library.h - LLVM IR for the library ops (ir::OpFamily::Library, rtlib/xops.h): an XCall
// describing the op's tensors (as XTensor windows) and attributes is filled on the stack and
// passed to the precompiled routine pto_rt_xop, whose status the kernel returns when non-zero.
#pragma once

#include "llvm/kernel_builder.h"

namespace pto::codegen {

/// Emits library op `op` at the builder's insertion point.
void lower_library(KernelBuilder &kb, const ir::Op &op);

} // namespace pto::codegen
