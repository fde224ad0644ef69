// dtype.cpp - Names and element facts of pto::DataType.
#include "pto/dtype.h"

#include <array>
#include <cctype>

namespace pto {
namespace {
struct DTypeFacts {
  const char *name;
  const char *short_name;
  int64_t bytes;
  bool supported, is_float, is_int;
};
constexpr std::array<DTypeFacts, 25> kFacts{{
    {"DT_INT4", "int4", 0, false, false, true},
    {"DT_INT8", "int8", 1, true, false, true},
    {"DT_INT16", "int16", 2, true, false, true},
    {"DT_INT32", "int32", 4, true, false, true},
    {"DT_INT64", "int64", 8, true, false, true},
    {"DT_FP8", "fp8", 1, false, true, false},
    {"DT_FP16", "fp16", 2, true, true, false},
    {"DT_FP32", "fp32", 4, true, true, false},
    {"DT_BF16", "bf16", 2, true, true, false},
    {"DT_HF4", "hf4", 0, false, true, false},
    {"DT_HF8", "hf8", 1, false, true, false},
    {"DT_UINT8", "uint8", 1, true, false, true},
    {"DT_UINT16", "uint16", 2, false, false, true},
    {"DT_UINT32", "uint32", 4, false, false, true},
    {"DT_UINT64", "uint64", 8, false, false, true},
    {"DT_BOOL", "bool", 1, true, false, false},
    {"DT_DOUBLE", "fp64", 8, true, true, false},
    {"DT_FP8E4M3", "fp8e4m3", 1, false, true, false},
    {"DT_FP8E5M2", "fp8e5m2", 1, false, true, false},
    {"DT_FP8E8M0", "fp8e8m0", 1, false, true, false},
    {"DT_FP4_E2M1X2", "fp4e2m1x2", 1, false, true, false},
    {"DT_FP4_E1M2X2", "fp4e1m2x2", 1, false, true, false},
    {"DT_FP4_E2M1", "fp4e2m1", 0, false, true, false},
    {"DT_FP4_E1M2", "fp4e1m2", 0, false, true, false},
    {"DT_BOTTOM", "bottom", 0, false, false, false},
}};
const DTypeFacts *facts(DataType dt) {
  auto i = static_cast<int32_t>(dt);
  return (i >= 0 && i < static_cast<int32_t>(kFacts.size())) ? &kFacts[static_cast<size_t>(i)]
                                                             : nullptr;
}

/// True for the dtypes PTO_CASE_UNSUPPORTED_DTYPES lists.
constexpr bool listed_unsupported(DataType dt) {
  switch (dt) {
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_BOOL:
  case DT_FP16:
  case DT_BF16:
  case DT_FP32:
  case DT_DOUBLE:
    return false;
  PTO_CASE_UNSUPPORTED_DTYPES:
    return true;
  }
  return true;
}
constexpr bool unsupported_list_matches() {
  for (size_t i = 0; i < kFacts.size(); ++i)
    if (listed_unsupported(static_cast<DataType>(i)) == kFacts[i].supported)
      return false;
  return true;
}
static_assert(unsupported_list_matches(),
              "PTO_CASE_UNSUPPORTED_DTYPES (dtype.h) must list exactly the unsupported dtypes");
} // namespace

std::string name(DataType dt) {
  auto *f = facts(dt);
  return f ? f->name : "DT_" + std::to_string(static_cast<int32_t>(dt));
}
std::string short_name(DataType dt) {
  auto *f = facts(dt);
  return f ? f->short_name : "dtype" + std::to_string(static_cast<int32_t>(dt));
}
DataType parse_dtype(const std::string &s) {
  std::string lower;
  for (char c : s)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < kFacts.size(); ++i) {
    std::string n = kFacts[i].name;
    for (auto &c : n)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kFacts[i].short_name || lower == n)
      return static_cast<DataType>(i);
  }
  if (lower == "double" || lower == "float64")
    return DT_DOUBLE;
  if (lower == "float32" || lower == "float")
    return DT_FP32;
  if (lower == "float16" || lower == "half")
    return DT_FP16;
  if (lower == "bfloat16")
    return DT_BF16;
  return DT_BOTTOM;
}
int64_t bytes_of(DataType dt) {
  auto *f = facts(dt);
  return f ? f->bytes : 0;
}
bool is_supported(DataType dt) {
  auto *f = facts(dt);
  return f && f->supported;
}
bool is_float(DataType dt) {
  auto *f = facts(dt);
  return f && f->supported && f->is_float;
}
bool is_int(DataType dt) {
  auto *f = facts(dt);
  return f && f->supported && f->is_int;
}

} // namespace pto
