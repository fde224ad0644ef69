// host_isa.h - The LLVM backend's side of PTO_ISA (passes/isa.h): the host CPU's features and the
// process's JIT target. The target machine built for it is host_target.h's; the SLEEF functions of
// each level are vector_math.h's. No LLVM types: tests include it.
#pragma once

#include "passes/isa.h"

namespace pto::codegen {

/// The process's JIT target on this host (resolve_jit_target of PTO_ISA against the host's LLVM
/// CPU and features). PTO_ISA is read once per process: the first call of this or
/// check_isa_env fixes the target; later values of PTO_ISA do not change it (check_isa_env
/// rejects them). Throws ArgumentError (where "<codegen>") for a bad PTO_ISA when nothing
/// checked it first.
const JitTarget &jit_target();

/// True when `t`'s LLVM features turn `feature` on ("avx512bf16": "+avx512bf16" is in the list).
bool target_has_feature(const JitTarget &t, const std::string &feature);

} // namespace pto::codegen
