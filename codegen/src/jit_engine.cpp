// jit_engine.cpp - See jit_engine.h.
#include "jit_engine.h"

#include "pto/error.h"
#include "pto/runtime/abi.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <mutex>

// SLEEF vector functions, declared opaquely: only their addresses are taken here; generated code
// calls them with the right vector types.
extern "C" {
void Sleef_expf8_u10avx2();
void Sleef_logf8_u10avx2();
void Sleef_expd4_u10avx2();
void Sleef_logd4_u10avx2();
void Sleef_expf16_u10avx512f();
void Sleef_logf16_u10avx512f();
void Sleef_expd8_u10avx512f();
void Sleef_logd8_u10avx512f();
}

namespace pto::codegen {

namespace {
std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}
} // namespace

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

struct JitModule::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

JitModule::~JitModule() = default;

void *JitModule::lookup(const std::string &name) const {
  auto sym = impl->jit->lookup(name);
  if (!sym)
    throw CompileError("<codegen>", "jit", "symbol " + name + " not found: " + to_string(sym.takeError()));
  return sym->toPtr<void *>();
}

namespace {
std::unique_ptr<JitModule> jit_compile_impl(std::unique_ptr<llvm::LLVMContext> &ctx,
                                            std::unique_ptr<llvm::Module> &m,
                                            const StageDump &dump);
} // namespace

std::unique_ptr<JitModule> jit_compile(std::unique_ptr<llvm::LLVMContext> ctx,
                                       std::unique_ptr<llvm::Module> m, const StageDump &dump) {
  try {
    return jit_compile_impl(ctx, m, dump);
  } catch (...) {
    m.reset(); // a module must die before its context (parameter destruction order is unspecified)
    throw;
  }
}

namespace {
std::unique_ptr<JitModule> jit_compile_impl(std::unique_ptr<llvm::LLVMContext> &ctx,
                                            std::unique_ptr<llvm::Module> &m,
                                            const StageDump &dump) {
  HostTarget &ht = host_target();
  m->setDataLayout(ht.tm->createDataLayout());
  m->setTargetTriple(ht.tm->getTargetTriple().str());
  {
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(*m, &os)) {
      std::string unopt;
      llvm::raw_string_ostream us(unopt);
      m->print(us, nullptr);
      dump("llvm", "unopt.ll", us.str());
      throw InternalError("<codegen>", "lower_llvm",
                          "generated LLVM IR is invalid: " + os.str() +
                              " (a ptojit bug; rerun with PTO_DUMP=llvm)");
    }
  }
  // O3 with the new pass manager, for the host CPU.
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    llvm::PassBuilder pb(ht.tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    auto mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*m, mam);
  }
  if (dump.wants("llvm")) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m->print(os, nullptr);
    dump("llvm", "ll", os.str());
  }
  if (dump.wants("asm")) {
    auto clone = llvm::CloneModule(*m);
    llvm::SmallString<0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (!ht.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
      pm.run(*clone);
    dump("asm", "s", std::string(buf.str()));
  }

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    throw CompileError("<codegen>", "jit", to_string(jtmb.takeError()));
  jtmb->setCPU(ht.cpu);
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::SubtargetFeatures sf(ht.features);
  jtmb->getFeatures() = sf;
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit)
    throw CompileError("<codegen>", "jit", "LLJIT: " + to_string(jit.takeError()));
  auto &jd = (*jit)->getMainJITDylib();
  auto &es = (*jit)->getExecutionSession();
  llvm::orc::SymbolMap syms;
  auto bind = [&](const char *name, void *addr) {
    syms[es.intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                             llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  };
  bind("pto_rt_my_pe", reinterpret_cast<void *>(&pto_rt_my_pe));
  bind("pto_rt_n_pes", reinterpret_cast<void *>(&pto_rt_n_pes));
  bind("pto_rt_kernel_enter", reinterpret_cast<void *>(&pto_rt_kernel_enter));
  bind("pto_rt_kernel_exit", reinterpret_cast<void *>(&pto_rt_kernel_exit));
  bind("pto_rt_heap_base", reinterpret_cast<void *>(&pto_rt_heap_base));
  bind("pto_rt_put", reinterpret_cast<void *>(&pto_rt_put));
  bind("pto_rt_get", reinterpret_cast<void *>(&pto_rt_get));
  bind("pto_rt_signal", reinterpret_cast<void *>(&pto_rt_signal));
  bind("pto_rt_wait_until", reinterpret_cast<void *>(&pto_rt_wait_until));
  bind("pto_rt_clear", reinterpret_cast<void *>(&pto_rt_clear));
  bind("pto_rt_fail", reinterpret_cast<void *>(&pto_rt_fail));
  bind("pto_rt_alloc", reinterpret_cast<void *>(&pto_rt_alloc));
  bind("Sleef_expf8_u10avx2", reinterpret_cast<void *>(&Sleef_expf8_u10avx2));
  bind("Sleef_logf8_u10avx2", reinterpret_cast<void *>(&Sleef_logf8_u10avx2));
  bind("Sleef_expd4_u10avx2", reinterpret_cast<void *>(&Sleef_expd4_u10avx2));
  bind("Sleef_logd4_u10avx2", reinterpret_cast<void *>(&Sleef_logd4_u10avx2));
  bind("Sleef_expf16_u10avx512f", reinterpret_cast<void *>(&Sleef_expf16_u10avx512f));
  bind("Sleef_logf16_u10avx512f", reinterpret_cast<void *>(&Sleef_logf16_u10avx512f));
  bind("Sleef_expd8_u10avx512f", reinterpret_cast<void *>(&Sleef_expd8_u10avx512f));
  bind("Sleef_logd8_u10avx512f", reinterpret_cast<void *>(&Sleef_logd8_u10avx512f));
  if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(syms))))
    throw CompileError("<codegen>", "jit", to_string(std::move(err)));
  // memset/memcpy and friends that O3 may introduce come from the process.
  auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!gen)
    throw CompileError("<codegen>", "jit", to_string(gen.takeError()));
  jd.addGenerator(std::move(*gen));
  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw CompileError("<codegen>", "jit", "addIRModule: " + to_string(std::move(err)));
  auto out = std::make_unique<JitModule>();
  out->impl = std::make_unique<JitModule::Impl>();
  out->impl->jit = std::move(*jit);
  return out;
}
} // namespace

} // namespace pto::codegen
