// jit_engine.cpp - See jit_engine.h.
#include "llvm/jit_engine.h"

#include "pto/error.h"

#include "llvm/abi_decls.h"
#include "llvm/vector_math.h"

#include <llvm/ExecutionEngine/JITLink/JITLinkMemoryManager.h>
#include <llvm/ExecutionEngine/Orc/EPCEHFrameRegistrar.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <atomic>
#include <map>
#include <mutex>

namespace pto::codegen {

namespace {
std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

/// JITLink memory manager that counts what the in-process manager hands out: bytes and mappings
/// per JITDylib and in total. Every allocation is one mapping of its page-rounded segments.
class CountingMemoryManager final : public llvm::jitlink::JITLinkMemoryManager {
public:
  CountingMemoryManager(std::unique_ptr<llvm::jitlink::InProcessMemoryManager> inner,
                        uint64_t page_bytes)
      : inner_(std::move(inner)), page_bytes_(page_bytes) {}

  void allocate(const llvm::jitlink::JITLinkDylib *jd, llvm::jitlink::LinkGraph &g,
                OnAllocatedFunction on_allocated) override {
    const int64_t bytes = layout_bytes(g);
    inner_->allocate(jd, g,
                     [this, jd, bytes, done = std::move(on_allocated)](AllocResult r) mutable {
                       if (!r)
                         return done(std::move(r));
                       done(std::make_unique<Counted>(*this, jd, bytes, std::move(*r)));
                     });
  }
  using JITLinkMemoryManager::allocate;

  void deallocate(std::vector<FinalizedAlloc> allocs,
                  OnDeallocatedFunction on_deallocated) override {
    {
      std::lock_guard lk(mu_);
      for (auto &a : allocs) {
        auto it = live_.find(a.getAddress().getValue());
        if (it == live_.end())
          continue;
        int64_t &left = per_jd_[it->second.jd];
        left -= it->second.bytes;
        if (left == 0)
          per_jd_.erase(it->second.jd);
        bytes_ -= it->second.bytes;
        live_.erase(it);
      }
    }
    inner_->deallocate(std::move(allocs), std::move(on_deallocated));
  }
  using JITLinkMemoryManager::deallocate;

  int64_t bytes_of(const llvm::jitlink::JITLinkDylib *jd) {
    std::lock_guard lk(mu_);
    auto it = per_jd_.find(jd);
    return it == per_jd_.end() ? 0 : it->second;
  }
  void totals(int64_t &bytes, int64_t &mappings) {
    std::lock_guard lk(mu_);
    bytes = bytes_;
    mappings = static_cast<int64_t>(live_.size());
  }

private:
  /// An allocation on its way to finalization; counted once finalized.
  class Counted final : public InFlightAlloc {
  public:
    Counted(CountingMemoryManager &mm, const llvm::jitlink::JITLinkDylib *jd, int64_t bytes,
            std::unique_ptr<InFlightAlloc> inner)
        : mm_(mm), jd_(jd), bytes_(bytes), inner_(std::move(inner)) {}
    void abandon(OnAbandonedFunction on_abandoned) override {
      inner_->abandon(std::move(on_abandoned));
    }
    void finalize(OnFinalizedFunction on_finalized) override {
      // The callback may outlive this object: capture values, not `this`.
      inner_->finalize([mm = &mm_, jd = jd_, bytes = bytes_,
                        done = std::move(on_finalized)](llvm::Expected<FinalizedAlloc> r) mutable {
        if (r)
          mm->record(r->getAddress().getValue(), jd, bytes);
        done(std::move(r));
      });
    }

  private:
    CountingMemoryManager &mm_;
    const llvm::jitlink::JITLinkDylib *jd_;
    int64_t bytes_;
    std::unique_ptr<InFlightAlloc> inner_;
  };

  struct Live {
    const llvm::jitlink::JITLinkDylib *jd;
    int64_t bytes;
  };

  void record(uint64_t addr, const llvm::jitlink::JITLinkDylib *jd, int64_t bytes) {
    std::lock_guard lk(mu_);
    live_[addr] = Live{jd, bytes};
    per_jd_[jd] += bytes;
    bytes_ += bytes;
  }

  /// What the in-process manager maps for `g`: its segments, each padded to whole pages.
  int64_t layout_bytes(llvm::jitlink::LinkGraph &g) const {
    llvm::jitlink::BasicLayout layout(g);
    auto sizes = layout.getContiguousPageBasedLayoutSizes(page_bytes_);
    if (!sizes) {
      llvm::consumeError(sizes.takeError()); // the real allocation reports it
      return 0;
    }
    return static_cast<int64_t>(sizes->total());
  }

  std::unique_ptr<llvm::jitlink::InProcessMemoryManager> inner_;
  uint64_t page_bytes_;
  std::mutex mu_;
  std::map<uint64_t, Live> live_;
  std::map<const llvm::jitlink::JITLinkDylib *, int64_t> per_jd_;
  int64_t bytes_ = 0;
};

/// The process-wide LLJIT. Its main JITDylib holds only the runtime and SLEEF symbols; each
/// module gets a JITDylib of its own that links against main, then the process.
struct Engine {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  CountingMemoryManager *memory = nullptr; ///< owned by the object linking layer
  /// Serializes compiles (one TargetMachine) and JITDylib removal.
  std::mutex mu;
  uint64_t next_id = 0;
  std::atomic<int64_t> modules{0};
};

/// The symbols generated code may call: the runtime's entry points (abi_decls.h) and the SLEEF
/// functions at every level (vector_math.h), from the tables the lowering declares them from.
llvm::orc::SymbolMap runtime_symbols(llvm::orc::ExecutionSession &es) {
  llvm::orc::SymbolMap syms;
  auto bind = [&](const std::vector<std::pair<std::string, void *>> &table) {
    for (const auto &[name, addr] : table)
      syms[es.intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                               llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  };
  bind(rt_symbols());
  bind(sleef_symbols());
  return syms;
}

std::unique_ptr<Engine> make_engine() {
  HostTarget &ht = host_target();
  check_abi_layouts(ht.tm->createDataLayout()); // once per process, before any generated code
  auto e = std::make_unique<Engine>();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb)
    throw CompileError("<codegen>", "jit", to_string(jtmb.takeError()));
  jtmb->setCPU(ht.cpu);
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jtmb->getFeatures() = llvm::SubtargetFeatures(ht.features);
  // What LLJIT sets itself when it picks JITLink, which our own linking layer replaces.
  jtmb->setCodeModel(llvm::CodeModel::Small);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  Engine *raw = e.get();
  auto jit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(std::move(*jtmb))
          // No static initializers to run: no platform, so no per-JITDylib platform state.
          .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
          .setObjectLinkingLayerCreator(
              [raw](llvm::orc::ExecutionSession &es, const llvm::Triple &)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
                auto page = llvm::sys::Process::getPageSize();
                if (!page)
                  return page.takeError();
                auto mm = std::make_unique<CountingMemoryManager>(
                    std::make_unique<llvm::jitlink::InProcessMemoryManager>(*page), *page);
                raw->memory = mm.get();
                auto layer = std::make_unique<llvm::orc::ObjectLinkingLayer>(es, std::move(mm));
                auto frames = llvm::orc::EPCEHFrameRegistrar::Create(es);
                if (!frames)
                  return frames.takeError();
                layer->addPlugin(
                    std::make_unique<llvm::orc::EHFrameRegistrationPlugin>(es, std::move(*frames)));
                return std::unique_ptr<llvm::orc::ObjectLayer>(std::move(layer));
              })
          .create();
  if (!jit)
    throw CompileError("<codegen>", "jit", "LLJIT: " + to_string(jit.takeError()));
  e->jit = std::move(*jit);
  auto &main = e->jit->getMainJITDylib();
  if (auto err =
          main.define(llvm::orc::absoluteSymbols(runtime_symbols(e->jit->getExecutionSession()))))
    throw CompileError("<codegen>", "jit", to_string(std::move(err)));
  return e;
}

/// The engine once created (null before the first compile).
std::atomic<Engine *> g_engine{nullptr};

/// The engine, created on first use and never destroyed: modules cached in static objects may
/// be freed during exit, after any static engine would be gone.
Engine &engine() {
  static std::once_flag once;
  std::call_once(once, [] { g_engine.store(make_engine().release()); });
  return *g_engine.load();
}

// Removes `jd` and everything in it. Caller holds engine().mu.
void remove_dylib(Engine &e, llvm::orc::JITDylib &jd) {
  // Nothing to report to: the module is gone either way, and a destructor cannot throw.
  llvm::consumeError(e.jit->getExecutionSession().removeJITDylib(jd));
}

} // namespace

struct JitModule::Impl {
  llvm::orc::JITDylib *jd = nullptr;
};

JitModule::JitModule(std::unique_ptr<Impl> impl, void *entry, int64_t code_bytes)
    : impl_(std::move(impl)), entry_(entry), code_bytes_(code_bytes) {}

JitModule::~JitModule() {
  if (!impl_ || !impl_->jd)
    return;
  Engine &e = engine();
  std::lock_guard lk(e.mu);
  remove_dylib(e, *impl_->jd);
  e.modules.fetch_sub(1);
}

void *jit_symbol_address(const std::string &name) {
  Engine &e = engine();
  std::lock_guard lk(e.mu);
  // The main JITDylib only, not its link order: the process's own symbols do not count.
  auto sym = e.jit->lookup(e.jit->getMainJITDylib(), name);
  if (!sym) {
    llvm::consumeError(sym.takeError());
    return nullptr;
  }
  return sym->toPtr<void *>();
}

JitMemory jit_memory() {
  JitMemory m;
  Engine *e = g_engine.load();
  if (!e) // nothing compiled yet: do not build an LLJIT just to report zeros
    return m;
  m.modules = e->modules.load();
  if (e->memory)
    e->memory->totals(m.bytes, m.mappings);
  return m;
}

namespace {
std::string emit_object_impl(std::unique_ptr<llvm::Module> &m, const StageDump &dump);
} // namespace

std::unique_ptr<JitModule> jit_link_object(std::string_view object, const std::string &name) {
  Engine &e = engine();
  std::lock_guard lk(e.mu);
  auto &es = e.jit->getExecutionSession();
  auto &jd = es.createBareJITDylib("pto_module_" + std::to_string(e.next_id++));
  llvm::orc::JITDylibSearchOrder links{
      {&e.jit->getMainJITDylib(), llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}};
  for (auto &l : e.jit->defaultLinkOrder()) // the process's symbols (memset, memcpy, ...)
    links.push_back(l);
  jd.setLinkOrder(std::move(links));
  auto fail = [&](const std::string &what, llvm::Error err) {
    std::string msg = what + to_string(std::move(err));
    remove_dylib(e, jd);
    throw CompileError("<codegen>", "jit", msg);
  };
  // JITLink reads the object in place while linking: a copy-free view of the caller's bytes.
  auto buf = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(object.data(), object.size()), name,
                                              /*RequiresNullTerminator=*/false);
  if (auto err = e.jit->addObjectFile(jd, std::move(buf)))
    fail("addObjectFile: ", std::move(err));
  auto sym = e.jit->lookup(jd, "pto_kernel");
  if (!sym)
    fail("symbol pto_kernel not found: ", sym.takeError());
  auto impl = std::make_unique<JitModule::Impl>();
  impl->jd = &jd;
  auto out = std::make_unique<JitModule>(std::move(impl), sym->toPtr<void *>(),
                                         e.memory ? e.memory->bytes_of(&jd) : 0);
  e.modules.fetch_add(1);
  return out;
}

std::string jit_emit_object(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> m,
                            const StageDump &dump) {
  std::string obj;
  try {
    obj = emit_object_impl(m, dump);
  } catch (...) {
    m.reset(); // a module must die before its context (parameter destruction order is unspecified)
    throw;
  }
  m.reset();
  ctx.reset();
  return obj;
}

std::unique_ptr<JitModule> jit_compile(std::unique_ptr<llvm::LLVMContext> ctx,
                                       std::unique_ptr<llvm::Module> m, const StageDump &dump) {
  const std::string name = m->getModuleIdentifier();
  const std::string obj = jit_emit_object(std::move(ctx), std::move(m), dump);
  return jit_link_object(obj, name);
}

namespace {
std::string emit_object_impl(std::unique_ptr<llvm::Module> &m, const StageDump &dump) {
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
  // Machine code: an ELF relocatable object (what the on-disk cache stores), emitted by the host
  // target machine (PIC, small code model: what LLJIT's own compiler would use with JITLink).
  llvm::SmallString<0> obj;
  {
    llvm::raw_svector_ostream os(obj);
    llvm::legacy::PassManager pm;
    if (ht.tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw CompileError("<codegen>", "jit", "the host target cannot emit object files");
    pm.run(*m);
  }
  return std::string(obj.str());
}
} // namespace

} // namespace pto::codegen
