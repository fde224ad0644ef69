// host_target.cpp - See host_target.h.
#include "llvm/host_target.h"

#include "pto/error.h"

#include <llvm/ADT/StringMap.h>
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
    t.cpu = llvm::sys::getHostCPUName().str();
    std::string feats;
    for (auto &f : llvm::sys::getHostCPUFeatures()) {
      if (!feats.empty())
        feats += ",";
      feats += (f.second ? "+" : "-") + f.first().str();
      if (f.first() == "avx512f" && f.second)
        t.avx512f = true;
    }
    t.features = feats;
    t.isa = t.avx512f ? Isa::Avx512 : Isa::Avx2;
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
