// xops_sort.cpp - Library routines (xops.h). Not implemented yet.
#include "xops.h"

namespace pto::codegen {

int32_t xop_sort(const XCall &call) {
  throw InternalError("<xop>", ir::op_info(static_cast<ir::OpKind>(call.kind)).name,
                      "library op not implemented yet");
}

} // namespace pto::codegen
