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

namespace {
/// The highest level whose features the host has: SLEEF's avx512f variants need AVX-512F, its
/// avx2 ones AVX2 and FMA, its sse4 ones SSE4.1.
Isa level_of(const llvm::StringMap<bool> &host) {
  auto has = [&](const char *f) { return host.lookup(f); };
  if (has("avx512f"))
    return Isa::Avx512;
  if (has("avx2") && has("fma"))
    return Isa::Avx2;
  if (has("sse4.1") && has("sse4.2"))
    return Isa::Sse4;
  return Isa::Sse2;
}
} // namespace

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
    const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (auto &f : host) {
      if (!feats.empty())
        feats += ",";
      feats += (f.second ? "+" : "-") + f.first().str();
    }
    t.features = feats;
    t.isa = level_of(host);
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
