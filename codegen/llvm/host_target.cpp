// host_target.cpp - See host_target.h.
#include "llvm/host_target.h"

#include "pto/error.h"

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

namespace pto::codegen {

HostTarget::HostTarget() = default;
HostTarget::~HostTarget() = default;

HostTarget &host_target() {
  static HostTarget t;
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    static_cast<JitTarget &>(t) = jit_target(); // the host's CPU, capped by PTO_ISA
    std::string triple = llvm::sys::getProcessTriple();
    std::string err;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target)
      throw CompileError("<codegen>", "jit", "LLVM has no target for " + triple + ": " + err);
    llvm::TargetOptions opts;
    t.tm.reset(target->createTargetMachine(triple, t.cpu, t.features, opts, llvm::Reloc::PIC_,
                                           std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  });
  if (!t.tm)
    throw CompileError("<codegen>", "jit", "could not create the host target machine");
  return t;
}

} // namespace pto::codegen
