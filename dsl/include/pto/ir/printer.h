// printer.h - A readable, stable text form of a traced program (diffable; used by tests, the
// PTO_DUMP=ir stage and the kernel cache's structural hash).
#pragma once

#include "pto/ir/program.h"

#include <string>

namespace pto::ir {

/// Prints `p`: one line per value and op, loops indented. Deterministic for equal programs.
std::string print(const Program &p);
/// A structural hash of the program (of its printed form, source locations excluded).
uint64_t structural_hash(const Program &p);

} // namespace pto::ir
