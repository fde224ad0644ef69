// printer.h - A readable, stable text form of a traced program (diffable; used by tests, the
// PTO_DUMP=ir stage and the kernel cache's structural hash).
#pragma once

#include "pto/ir/program.h"

#include <string>

namespace pto::ir {

/// Prints `p`: one line per value and op, loops indented. Deterministic for equal programs.
std::string print(const Program &p);
/// One op's head as print writes it, without its attributes, body or indentation:
/// `%t3 = exp(%t2)`, `%t5 = add(%t4, scalar 1e-05)` (how the fusion plan dump names members).
std::string print_op_head(const Program &p, const Op &op);
/// A structural hash of the program (of its printed form, source locations excluded).
uint64_t structural_hash(const Program &p);
/// The structural hash from a printed form: structural_hash(p) == text_hash(print(p)), for a
/// caller that has printed `p` already.
uint64_t text_hash(const std::string &printed);

} // namespace pto::ir
