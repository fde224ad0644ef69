// local_tensor.cpp - pto::tensor, PyPTO's local tensor inside a kernel (pto/local_tensor.h).
#include "pto/local_tensor.h"

namespace pto {

Tensor tensor(const std::vector<SymbolicScalar> &shape, DataType dtype,
              const std::string & /*name: a hint*/, SrcLoc loc) {
  return zeros(shape, dtype, loc);
}

} // namespace pto
