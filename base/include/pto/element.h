// element.h - One element of a tensor in memory, read and written by its storage dtype: the
// conversion rules every executor, the library routines and the host share (saturation, wrap,
// rounding once).
#pragma once

#include "pto/dtype.h"

#include <cstdint>

namespace pto::element {

/// The floating element of dtype `dt` (FP16, BF16, FP32, DOUBLE) at `p`, widened exactly to
/// double. Throws InternalError for another dtype.
double load_f(const uint8_t *p, DataType dt);
/// The integer element of dtype `dt` (INT8..INT64, UINT8, BOOL as 0/1) at `p`, widened to int64.
/// Throws InternalError for another dtype.
int64_t load_i(const uint8_t *p, DataType dt);
/// Stores `v` as dtype `dt` at `p`: FP32 and FP64 round to nearest even once; FP16 and BF16 go
/// through fp32 with round-to-odd so that the result is rounded once; integers truncate toward
/// zero and saturate (NaN -> 0); BOOL is v != 0. Throws InternalError for an unsupported dtype.
void store_f(uint8_t *p, DataType dt, double v);
/// Stores `v` as dtype `dt` at `p`: integers wrap (two's complement), floats round to nearest
/// even once (not through fp32 or fp64), BOOL is v != 0. Throws InternalError for an
/// unsupported dtype.
void store_i(uint8_t *p, DataType dt, int64_t v);
/// `v` rounded to dtype `dt` once (FP16, BF16, FP32 to nearest even) and widened back; other
/// dtypes return `v`.
double round_scalar(double v, DataType dt);

} // namespace pto::element
