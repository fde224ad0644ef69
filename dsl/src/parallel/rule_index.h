// rule_index.h - The index of every rule in kRules (rules.cpp defines the table, rules_api.cpp
// the public ops that call it): one enumerator per row, in the table's order.
#pragma once

#include "parallel_internal.h"

#include <cstddef>

namespace pto::parallel::detail {

enum RuleIndex : size_t {
  kMatMul,
#define PTO_PAR_BINARY(NAME, MS, PARTIALS) k_##NAME,
#define PTO_PAR_UNARY(NAME, MS, PARTIALS) k_##NAME,
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY
  kElu,
  kCast,
  kOnesLike,
  kZerosLike,
  kBiasAdd,
  kBroadcastTo,
  kUnsqueeze,
  kSqueeze,
  kSum,
  kAmax,
  kAmin,
  kMean,
  kSoftmax,
  kLogSoftmax,
  kPermute,
  kReshape,
  kApproximateEqual,
  kPrelu,
  kL2Normalize,
  kConcat,
  kSplit,
  kSlice,
  kStridedSlice,
  kArgMaxWithValue,
  kArgMinWithValue,
  kTopk,
  kTile,
  kIndexSelect,
  kEmbedding,
  kOneHot,
  kUnsortedSegmentSum,
  kUnsortedSegmentMin,
  kUnsortedSegmentMax,
  kStack,
  kSigmoidCrossEntropy,
  kSoftmaxCrossEntropy,
  kUnique,
  kDropoutGenMask,
  kDropoutDoMask,
  kRuleCount
};

/// The table itself (rules.cpp), kRuleCount rows, indexed by RuleIndex.
extern const Rule kRules[kRuleCount];
inline constexpr size_t kFirstBinary = k_add, kFirstUnary = k_neg;

} // namespace pto::parallel::detail
