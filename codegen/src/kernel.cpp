// kernel.cpp - pto::jit's host side: signature keys, tracing, compile-once, argument checks
// and the call into an Executable on the calling PE.
#include "pto/codegen/compile.h"
#include "pto/ir/printer.h"
#include "pto/ir/recorder.h"
#include "pto/ir/verifier.h"
#include "pto/jit.h"
#include "pto/runtime/context.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

namespace pto::detail {

namespace {

struct Entry {
  ir::Program program;
  std::shared_ptr<const codegen::Executable> exe;
  std::vector<std::vector<int64_t>> dims; ///< per param: declared dim (size, STATIC, DYNAMIC)
  std::vector<DataType> dtypes;
};

RunMode default_run_mode() {
  const char *m = std::getenv("PTO_RUN_MODE");
  if (m && std::string(m) == "interpret")
    return RunMode::Interpret;
  return RunMode::Jit;
}

std::string dims_str(const std::vector<int64_t> &d) { return fmt::format("[{}]", fmt::join(d, ", ")); }

} // namespace

struct KernelCore::Impl {
  std::string name;
  JitOptions opts;
  std::source_location loc;
  mutable std::mutex mu;
  std::map<std::string, std::shared_ptr<Entry>> cache;
  KernelStats stats;
  std::string last_ir;

  /// Declared dims of parameter `p` for an argument of rank `rank`.
  std::vector<int64_t> declared(size_t p, const HostTensor &arg, const std::source_location &cl) {
    std::vector<int64_t> d(arg.shape().size(), STATIC);
    if (p < opts.specs.size() && !opts.specs[p].dims.empty()) {
      d = opts.specs[p].dims;
      if (d.size() != arg.shape().size())
        throw ArgumentError(cl, name,
                            fmt::format("tensor argument {} has rank {}, the kernel declares {}", p,
                                        arg.shape().size(), d.size()));
      for (size_t i = 0; i < d.size(); ++i) {
        if (d[i] < DYNAMIC)
          throw ArgumentError(loc, name,
                              fmt::format("TensorSpec {} dim {} is {}; use a size, pto::STATIC or "
                                          "pto::DYNAMIC",
                                          p, i, d[i]));
        if (d[i] >= 0 && d[i] != arg.shape()[i])
          throw ArgumentError(cl, name,
                              fmt::format("tensor argument {} dim {} is {}, the kernel fixes it to "
                                          "{}",
                                          p, i, arg.shape()[i], d[i]));
      }
    }
    if (p < opts.specs.size() && opts.specs[p].dtype != DT_BOTTOM &&
        opts.specs[p].dtype != arg.dtype())
      throw ArgumentError(cl, name,
                          fmt::format("tensor argument {} has dtype {}, the kernel declares {}", p,
                                      pto::name(arg.dtype()), pto::name(opts.specs[p].dtype)));
    return d;
  }
};

KernelCore::KernelCore(std::string name, JitOptions opts, std::source_location loc)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->opts = std::move(opts);
  impl_->loc = loc;
  if (impl_->name.empty())
    throw ArgumentError(loc, "jit", "kernel name must not be empty");
}

KernelCore::~KernelCore() = default;

KernelStats KernelCore::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

std::string KernelCore::last_ir() const {
  std::lock_guard lk(impl_->mu);
  return impl_->last_ir;
}

void KernelCore::call(const std::vector<HostTensor *> &tensors,
                      const std::vector<std::string> &constants, const TraceFn &trace,
                      std::source_location call_loc) {
  Impl &k = *impl_;
  if (tensors.empty())
    throw ArgumentError(call_loc, k.name, "expected at least 1 tensor argument, got 0");
  std::vector<std::vector<int64_t>> decl;
  std::string key;
  for (size_t p = 0; p < tensors.size(); ++p) {
    const HostTensor &t = *tensors[p];
    decl.push_back(k.declared(p, t, call_loc));
    key += short_name(t.dtype()) + "[";
    for (size_t i = 0; i < decl[p].size(); ++i)
      key += (decl[p][i] == DYNAMIC ? std::string("?") : std::to_string(t.shape()[i])) + ",";
    key += "]";
  }
  for (auto &c : constants)
    key += "|" + c;
  // The trace may unroll loops over PEs (collectives): the world and its groups are part of the
  // signature.
  pto_ctx *ctx = runtime::current_ctx();
  int world_pes = runtime::n_pes(ctx);
  auto groups = runtime::group_sizes(ctx);
  key += fmt::format("|pes={}", world_pes);
  for (auto &[g, n] : groups)
    key += fmt::format("|{}:{}", g, n);

  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lk(k.mu);
    auto it = k.cache.find(key);
    if (it != k.cache.end()) {
      entry = it->second;
    } else {
      auto t0 = std::chrono::steady_clock::now();
      auto e = std::make_shared<Entry>();
      ir::Recorder rec(k.name);
      rec.world_n_pes = world_pes;
      rec.known_groups = groups;
      auto &prog = rec.program();
      std::vector<Tensor> params;
      for (size_t p = 0; p < tensors.size(); ++p) {
        const HostTensor &t = *tensors[p];
        ir::Value v;
        v.kind = ir::ValueKind::Param;
        v.dtype = t.dtype();
        v.param_index = static_cast<int>(p);
        v.name = "arg" + std::to_string(p);
        for (size_t i = 0; i < t.shape().size(); ++i) {
          if (decl[p][i] == DYNAMIC)
            v.shape.push_back(SymbolicScalar::symbol(SymKind::InputDim, static_cast<int64_t>(p),
                                                     static_cast<int64_t>(i),
                                                     fmt::format("arg{}.shape[{}]", p, i)));
          else
            v.shape.emplace_back(t.shape()[i]);
        }
        v.valid = v.shape;
        ir::ValueId id = rec.add_value(std::move(v));
        prog.params.push_back(id);
        params.push_back(rec.tensor(id));
      }
      for (auto &c : constants)
        prog.constants.push_back(ir::ConstParam{c});
      trace(params);
      rec.flush_deferred(); // deferred collectives (allreduce fusion) end with the trace
      ir::layout_shmem(prog);
      ir::verify(prog);
      e->dims = decl;
      for (auto *t : tensors)
        e->dtypes.push_back(t->dtype());
      RunMode mode = k.opts.run_mode.value_or(default_run_mode());
      auto copts = codegen::CompileOptions::from_env();
      e->exe = mode == RunMode::Interpret ? codegen::make_interpreter(prog)
                                          : codegen::compile_jit(prog, copts);
      e->program = std::move(prog);
      auto t1 = std::chrono::steady_clock::now();
      k.stats.traces++;
      if (e->exe->compile_ms > 0)
        k.stats.compiles++;
      k.stats.compile_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
      k.last_ir = ir::print(e->program);
      k.cache.emplace(key, e);
      entry = e;
    }
    k.stats.calls++;
  }

  // Argument checks against the traced signature (key equality covers static dims).
  for (size_t p = 0; p < tensors.size(); ++p)
    if (tensors[p]->dtype() != entry->dtypes[p])
      throw ArgumentError(call_loc, k.name,
                          fmt::format("tensor argument {} has dtype {}, traced with {}", p,
                                      name(tensors[p]->dtype()), name(entry->dtypes[p])));
  std::vector<void *> ptrs;
  std::vector<int64_t> dims;
  for (auto *t : tensors) {
    ptrs.push_back(t->data());
    for (auto d : t->shape())
      dims.push_back(d);
  }
  runtime::begin_call(ctx, &entry->exe->sites(), k.name.c_str(), call_loc);
  try {
    entry->exe->run(ctx, ptrs.data(), dims.data());
  } catch (...) {
    // The interpreter is C++ and may throw; still close the call (its own recorded error, if
    // any, is secondary to this one).
    try {
      runtime::end_call(ctx);
    } catch (...) {
    }
    throw;
  }
  runtime::end_call(ctx); // throws the typed error a runtime call recorded
  (void)dims_str;
}

} // namespace pto::detail
