// xops.cpp - See xops.h: the dispatcher and the element access every routine uses.
#include "rtlib/xops.h"

#include "pto/element.h"

#include <exception>
#include <new>

namespace pto::codegen {

namespace {
DataType dt_of(const XTensor &t) { return static_cast<DataType>(t.dtype); }
uint8_t *elem(const XTensor &t, int64_t lin) {
  return static_cast<uint8_t *>(t.base) + lin * bytes_of(dt_of(t));
}

/// The registered-buffer allreduce (op_kinds.def AllreduceDirect): the runtime does it all.
int32_t xop_allreduce(const XCall &call) {
  if (call.n_tensors != 2 || call.n_ints != 2)
    throw InternalError("<xop>", "allreduce", "malformed allreduce call (a ptojit bug)");
  const XTensor &x = call.tensors[0], &y = call.tensors[1];
  return pto_rt_allreduce(call.ctx, static_cast<int32_t>(call.ints[0]),
                          static_cast<int32_t>(call.ints[1]), static_cast<int32_t>(x.dtype),
                          static_cast<int32_t>(x.rank), x.valid, x.base, x.strides, y.base,
                          y.strides, static_cast<int32_t>(call.site));
}

int32_t dispatch(const XCall &call) {
  if (call.kind < 0 || call.kind >= static_cast<int64_t>(ir::kNumOpKinds))
    throw InternalError("<xop>", "pto_rt_xop", "op kind out of range (a ptojit bug)");
  using L = ir::LibraryKind;
  switch (ir::kind_as<L>(static_cast<ir::OpKind>(call.kind))) {
  case L::Gather:
    return xop_gather(call);
  case L::IndexSelect:
    return xop_index_select(call);
  case L::Scatter:
    return xop_scatter(call);
  case L::IndexAdd:
    return xop_index_add(call);
  case L::IndexPut:
    return xop_index_put(call);
  case L::OneHot:
    return xop_one_hot(call);
  case L::SegmentReduce:
    return xop_segment_reduce(call);
  case L::Sort:
    return xop_sort(call);
  case L::Topk:
    return xop_topk(call);
  case L::Unique:
    return xop_unique(call);
  case L::BesselI0e:
    return xop_bessel_i0e(call);
  case L::BesselI1e:
    return xop_bessel_i1e(call);
  case L::AllreduceDirect:
    return xop_allreduce(call);
  }
  throw InternalError("<xop>", ir::op_info(static_cast<ir::OpKind>(call.kind)).name,
                      "not a library op (a ptojit bug)");
}
} // namespace

double x_load_f(const XTensor &t, int64_t lin) { return element::load_f(elem(t, lin), dt_of(t)); }
int64_t x_load_i(const XTensor &t, int64_t lin) { return element::load_i(elem(t, lin), dt_of(t)); }
void x_store_f(const XTensor &t, int64_t lin, double v) {
  element::store_f(elem(t, lin), dt_of(t), v);
}
void x_store_i(const XTensor &t, int64_t lin, int64_t v) {
  element::store_i(elem(t, lin), dt_of(t), v);
}

int64_t x_lin(const XTensor &t, const int64_t *idx) {
  int64_t lin = 0;
  for (int64_t d = 0; d < t.rank; ++d)
    lin += idx[d] * t.strides[d];
  return lin;
}
void *x_addr(const XTensor &t, const int64_t *idx) { return elem(t, x_lin(t, idx)); }

extern "C" int32_t pto_rt_xop(const XCall *call) {
  // Generated code cannot unwind: a routine's exception becomes the call's recorded error:
  // memory the host refuses is a RuntimeError, anything else a ptojit bug.
  try {
    return dispatch(*call);
  } catch (const std::bad_alloc &) {
    return pto_rt_fail_msg(call->ctx, PTO_ERROR_RUNTIME, static_cast<int32_t>(call->site),
                           "out of memory for the routine's working storage");
  } catch (const std::exception &e) {
    return pto_rt_fail_msg(call->ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(call->site),
                           e.what());
  }
}

} // namespace pto::codegen
