// verifier.h - Checks the invariants every later stage relies on; run after tracing.
#pragma once

#include "pto/ir/program.h"

namespace pto::ir {

/// Throws InternalError (naming the op and PTO_DUMP=ir) when `p` breaks an invariant:
/// - values: a valid shape of another rank; a view of a view, or of another rank or dtype than
///   its base, or with one offset per dim missing; a parameter not at its index in `params`;
/// - operands: ids out of range; arity per family; a compute op reading a token or shmem data;
/// - dtypes: elementwise operands of different dtypes, a result that is neither their dtype nor
///   DT_BOOL (a cast: not its target), a select condition that is not DT_BOOL, a reduction or an
///   assemble changing the dtype;
/// - ranks and shapes: an elementwise operand that does not broadcast to the result, a result
///   rank other than the widest operand's, a reduction result other than the input with the
///   axis removed (or 1, keepdim), a reduction axis out of range, an assemble whose view differs
///   in shape from its input, a vec tile with fewer entries than the space it tiles or an entry
///   <= 0, a permutation of the wrong rank, a matmul without a cube tile;
/// - regions: a value read, waited on or written outside the trace region that made it (a loop
///   body's value after the loop, one path's value on another), a loop with paths, a paths op
///   with a body or without paths, a check without its label, shmem indices out of range.
void verify(const Program &p);

} // namespace pto::ir
