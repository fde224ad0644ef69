// random_rules.h - The local functions of the DropoutGenMask / DropoutDoMask rows of the rule
// table (random_rules.cpp); the rows themselves are in rules.cpp's kRules, the public ops
// (parallel::dropout_gen_mask / dropout_do_mask / dropout) in random_rules.cpp.
#pragma once

#include "parallel_internal.h"

namespace pto::parallel::detail {

/// DropoutGenMask: input 0 is the WHOLE global mask (pto::dropout_gen_mask of the global shape,
/// every PE alike), sliced by apply() as the strategy says; the local function returns that
/// slice, so each PE's mask is its slice of the global mask, bit for bit.
Tensor local_dropout_gen_mask(const Call &c);
/// DropoutDoMask: pto::dropout_do_mask(x, mask, attrs.alpha = p) on the slices (x and its mask
/// split alike: rules.cpp's pairing check runs before).
Tensor local_dropout_do_mask(const Call &c);

} // namespace pto::parallel::detail
