// gather_rules.h - The factor signatures, local functions and seed-table checks of the indexing,
// segment, stacking, loss and Unique rows of the rule table (gather_rules.cpp); the rows
// themselves are in rules.cpp's kRules.
#pragma once

#include "parallel_internal.h"
#include "rule_signatures.h"

namespace pto::parallel::detail {

/// GatherV2 / Gather / SparseGatherV2 as pto::index_select(params, attrs.axis, indices [L]):
/// params' other dims FREE factors shared with the output; params' `axis` a REDUCE(sum) factor
/// (the masked lookup: each PE looks up the rows it owns, -0.0 elsewhere); indices' dim a FREE
/// factor, the output's `axis` dim.
Signature sig_index_select(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_index_select(const Call &c);
/// EmbeddingLookup as pto::embedding(weight [V, D], ids): V the masked-lookup REDUCE(sum) factor,
/// D a FREE factor (the output's last dim), each ids dim a FREE factor (the output's leading dims).
Signature sig_embedding(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_embedding(const Call &c);
/// OneHot as pto::one_hot(index, attrs.size[0] classes); input 1 is the rule's own [C] class
/// tensor (rules_api.cpp passes pto::arange(C)), whose factor is the output's last dim.
Signature sig_one_hot(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_one_hot(const Call &c);
/// UnsortedSegmentSum / Min / Max (attrs.fn 0 / 1 / 2, attrs.size[0] segments): the
/// segment_ids dims REDUCE(sum | min | max) factors shared with data's leading dims; data's other
/// dims FREE factors; the output's dim 0 a fresh (unsplit) factor.
Signature sig_unsorted_segment(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_unsorted_segment(const Call &c);
void check_unsorted_segment(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &a,
                            const Signature &sig, SrcLoc loc);
/// Pack as pto::stack(xs, attrs.axis): every input dim a FREE factor shared by all inputs; the
/// new dim a fresh (unsplit) factor of the output.
Signature sig_stack(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_stack(const Call &c);
/// SigmoidCrossEntropyWithLogits: elementwise (sig_elementwise).
Tensor local_sigmoid_cross_entropy(const Call &c);
/// SoftmaxCrossEntropyWithLogits' loss: logits and labels of one shape; the last dim a REDUCE(sum)
/// factor (the loss is a Partial(sum) when it is split), the others FREE.
Signature sig_softmax_cross_entropy(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_softmax_cross_entropy(const Call &c);
/// Unique: every input dim a GATHER factor (made whole), the output [N] a fresh factor; the
/// count is the second result. check_unique: the seed table's fully repeated strategy only.
Signature sig_unique(const Shapes &s, const Attrs &a, SrcLoc loc);
Tensor local_unique(const Call &c);
void check_unique(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &a,
                  const Signature &sig, SrcLoc loc);

} // namespace pto::parallel::detail
