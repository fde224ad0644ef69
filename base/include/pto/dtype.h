// dtype.h - pto::DataType with PyPTO's names and ordinals (reference §2.2), and element facts.
// The ordinals are part of the ABI: the runtime and generated code exchange them as int32.
#pragma once

#include <cstdint>
#include <string>

namespace pto {

/// Element types, as PyPTO `DataType` (same names, same ordinals).
enum DataType : int32_t {
  DT_INT4 = 0,
  DT_INT8 = 1,
  DT_INT16 = 2,
  DT_INT32 = 3,
  DT_INT64 = 4,
  DT_FP8 = 5,
  DT_FP16 = 6,
  DT_FP32 = 7,
  DT_BF16 = 8,
  DT_HF4 = 9,
  DT_HF8 = 10,
  DT_UINT8 = 11,
  DT_UINT16 = 12,
  DT_UINT32 = 13,
  DT_UINT64 = 14,
  DT_BOOL = 15,
  DT_DOUBLE = 16,
  DT_FP8E4M3 = 17,
  DT_FP8E5M2 = 18,
  DT_FP8E8M0 = 19,
  DT_FP4_E2M1X2 = 20,
  DT_FP4_E1M2X2 = 21,
  DT_FP4_E2M1 = 22,
  DT_FP4_E1M2 = 23,
  DT_BOTTOM = 24, ///< sentinel: unset, or "same as the source"
};

/// The case labels of the dtypes ptojit does not compute with (is_supported is false) and of
/// DT_BOTTOM, written `PTO_CASE_UNSUPPORTED_DTYPES:`. A switch over DataType lists the supported
/// dtypes and then these instead of `default:`, so that -Wswitch names every such switch when a
/// dtype is added to the enum (dtype.cpp checks the list against the facts table at compile time).
#define PTO_CASE_UNSUPPORTED_DTYPES                                                                \
  case DT_INT4:                                                                                    \
  case DT_FP8:                                                                                     \
  case DT_HF4:                                                                                     \
  case DT_HF8:                                                                                     \
  case DT_UINT16:                                                                                  \
  case DT_UINT32:                                                                                  \
  case DT_UINT64:                                                                                  \
  case DT_FP8E4M3:                                                                                 \
  case DT_FP8E5M2:                                                                                 \
  case DT_FP8E8M0:                                                                                 \
  case DT_FP4_E2M1X2:                                                                              \
  case DT_FP4_E1M2X2:                                                                              \
  case DT_FP4_E2M1:                                                                                \
  case DT_FP4_E1M2:                                                                                \
  case DT_BOTTOM

/// PyPTO's spelling of `dt` ("DT_FP32"); "DT_<ordinal>" for values outside the enum.
std::string name(DataType dt);
/// Short lower-case name used by the samples' --dtype flag and messages ("fp32", "bf16", "int32").
std::string short_name(DataType dt);
/// Parses a short name ("fp32") or PyPTO name ("DT_FP32"); returns DT_BOTTOM when unknown.
DataType parse_dtype(const std::string &s);
/// Bytes per element, as PyPTO `bytes_of`; 0 for the 4-bit and sentinel types.
int64_t bytes_of(DataType dt);
/// True for the types ptojit can compute with end to end (int8/16/32/64, uint8, fp16, bf16,
/// fp32, double, bool).
bool is_supported(DataType dt);
/// True for fp16, bf16, fp32 and double.
bool is_float(DataType dt);
/// True for the signed and unsigned integer types (not bool).
bool is_int(DataType dt);

} // namespace pto
