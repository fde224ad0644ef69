// rule_signatures.h - The factor signatures of the rule table's ops and the seed table's
// per-op constraint checks (rule_signatures.cpp); the rows of kRules (rules.cpp) name them.
#pragma once

#include "parallel_internal.h"

#include <cstdint>
#include <vector>

namespace pto::parallel::detail {

using Shapes = std::vector<std::vector<int64_t>>;

int norm_axis(int axis, size_t rank, const char *op, SrcLoc loc);
Signature sig_elementwise(const Shapes &s, const Attrs &, SrcLoc loc);
Signature sig_matmul(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_reduce(const Shapes &s, const Attrs &a, PartialOp op, const char *name, SrcLoc loc);
Signature sig_sum(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_amax(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_amin(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_mean(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_softmax_axis(const Shapes &s, const Attrs &a, const char *name, SrcLoc loc);
Signature sig_softmax(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_log_softmax(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_permute(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature reshape_signature(const std::vector<int64_t> &in, const std::vector<int64_t> &out,
                            const char *op, SrcLoc loc);
Signature sig_reshape(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_unsqueeze(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_squeeze(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_broadcast_to(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_bias_add(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_prelu(const Shapes &s, const Attrs &, SrcLoc loc);
Signature sig_arg_with_value(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_topk(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_concat(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_window(const Shapes &s, const Attrs &a, const char *op, SrcLoc loc);
Signature sig_split(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_slice(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_strided_slice(const Shapes &s, const Attrs &a, SrcLoc loc);
Signature sig_tile(const Shapes &s, const Attrs &a, SrcLoc loc);
void check_prelu(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &,
                 const Signature &sig, SrcLoc loc);
void check_window(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &a,
                  const Signature &sig, SrcLoc loc);
void check_tile(const Rule &rule, const Counts &c, const Shapes &, const Attrs &a,
                const Signature &sig, SrcLoc loc);
Signature sig_l2_normalize(const Shapes &s, const Attrs &a, SrcLoc loc);

} // namespace pto::parallel::detail
