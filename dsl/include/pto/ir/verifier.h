// verifier.h - Checks the invariants every later stage relies on; run after tracing.
#pragma once

#include "pto/ir/program.h"

namespace pto::ir {

/// Throws InternalError (naming the op and PTO_DUMP=ir) when `p` breaks an invariant: operand
/// ids out of range, arity, ranks and dtypes inconsistent with the op kind, views of views, a
/// value used outside the loop region that defines it, shmem indices out of range.
void verify(const Program &p);

} // namespace pto::ir
