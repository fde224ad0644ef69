// local_tensor.h - PyPTO's local tensors inside a kernel, `pypto.tensor(shape, dtype, name)` and
// C++ `Tensor(dtype, shape, name)` (reference §2.1), issue 13 item 4.
#pragma once

#include "pto/ops.h"
#include "pto/tensor.h"

#include <string>
#include <vector>

namespace pto {

/// A new local tensor of `shape` (ints or SymbolicScalars, run-time dims allowed as for
/// pto::full) and `dtype`, as PyPTO `pypto.tensor(shape, dtype, name)` inside a kernel: a
/// target for pto::assemble and an operand of any op. Differs: PyPTO leaves its contents
/// undefined; here it starts as zeros (pto::zeros), so reading a part never written is defined.
/// `name` is accepted as a hint (printed names stay ptojit's own, `tN`). Errors: those of
/// pto::zeros (ShapeError for a rank outside 1-4 or a dim < 1, DTypeError for an unsupported
/// dtype), naming "tensor".
Tensor tensor(const std::vector<SymbolicScalar> &shape, DataType dtype,
              const std::string &name = {}, SrcLoc loc = SrcLoc::current());

} // namespace pto
