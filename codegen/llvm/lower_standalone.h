// lower_standalone.h - LLVM IR for the standalone ops (ir::OpFamily::Standalone of program.h:
// argmax/argmin, cumsum/cumprod, arange, uniform/normal, reshape, expand, permute, concat, tile,
// pad, tril/triu). Each becomes scalar loop nests over its output's valid region (LLVM's loop
// vectorizer takes what it can), with exactly the semantics of interpreter_standalone.cpp.
// Called by lower_llvm's region walk; fuse.cpp never groups these ops, so their operands and
// result have storage.
#pragma once

#include "llvm/kernel_builder.h"

namespace pto::codegen {

/// Emits `op` (a Standalone-family op) at the builder's insertion point.
void lower_standalone(KernelBuilder &kb, const ir::Op &op);

} // namespace pto::codegen
