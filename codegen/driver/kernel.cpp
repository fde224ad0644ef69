// kernel.cpp - pto::jit's host side: signature keys, tracing, compile-once, argument checks
// and the call into an Executable on the calling PE.
#include "pto/jit.h"
#include "pto/runtime/context.h"

#include "driver/trace.h"
#include "passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>

namespace pto::detail {

namespace {

/// One specialization: a traced and compiled program, and what its trace depended on beyond
/// the signature key.
struct Entry {
  std::shared_ptr<const codegen::Executable> exe;
  std::vector<DataType> dtypes;
  /// The groups the trace looked up and their sizes then (0: no such group). The program is
  /// reused only while each still has that size.
  std::map<std::string, int> groups;
};

/// A kernel being traced on this thread.
struct Tracing {
  const void *core;
  const std::string *name;
};
/// The kernels being traced on this thread, innermost last.
thread_local std::vector<Tracing> t_tracing;

/// Marks a kernel as being traced on this thread for the lifetime of the scope.
class TracingScope {
public:
  TracingScope(const void *core, const std::string &name) { t_tracing.push_back({core, &name}); }
  ~TracingScope() { t_tracing.pop_back(); }
  TracingScope(const TracingScope &) = delete;
  TracingScope &operator=(const TracingScope &) = delete;
};

RunMode run_mode_from_env(const std::source_location &loc, const std::string &kernel) {
  const char *m = std::getenv("PTO_RUN_MODE");
  if (!m || !*m || std::string(m) == "jit")
    return RunMode::Jit;
  if (std::string(m) == "interpret")
    return RunMode::Interpret;
  throw ArgumentError(loc, "PTO_RUN_MODE",
                      fmt::format("unknown value '{}' (tracing kernel '{}'); expected one of: "
                                  "jit, interpret",
                                  m, kernel));
}

std::string dims_str(const std::vector<int64_t> &d) {
  return fmt::format("[{}]", fmt::join(d, ", "));
}

/// A declared shape as the user wrote it: sizes, STATIC, DYNAMIC.
std::string spec_str(const std::vector<int64_t> &d) {
  std::vector<std::string> s;
  for (auto x : d)
    s.push_back(x == DYNAMIC ? "DYNAMIC" : x == STATIC ? "STATIC" : std::to_string(x));
  return fmt::format("[{}]", fmt::join(s, ", "));
}

bool groups_match(const Entry &e, int world_pes, const std::map<std::string, int> &groups) {
  for (const auto &[name, size] : e.groups) {
    int now = 0;
    if (name == ir::kWorldGroup)
      now = world_pes;
    else if (auto it = groups.find(name); it != groups.end())
      now = it->second;
    if (now != size)
      return false;
  }
  return true;
}

} // namespace

struct KernelCore::Impl {
  std::string name;
  JitOptions opts;
  std::source_location loc;
  mutable std::mutex mu;
  /// Specializations by signature key; several when they differ in the groups they looked up.
  std::map<std::string, std::vector<std::shared_ptr<Entry>>> cache;
  KernelStats stats;
  std::string last_ir;

  /// Declared dims of parameter `p` for an argument of rank `rank`.
  std::vector<int64_t> declared(size_t p, const HostTensor &arg, const std::source_location &cl) {
    std::vector<int64_t> d(arg.shape().size(), STATIC);
    const TensorSpec *spec = p < opts.specs.size() ? &opts.specs[p] : nullptr;
    if (spec && !spec->dims.empty()) {
      d = spec->dims;
      for (size_t i = 0; i < d.size(); ++i)
        if (d[i] < DYNAMIC)
          throw ArgumentError(loc, name,
                              fmt::format("TensorSpec {} dim {} is {}; use a size, pto::STATIC or "
                                          "pto::DYNAMIC",
                                          p, i, d[i]));
      std::string why;
      if (d.size() != arg.shape().size())
        why = fmt::format("rank {}, the kernel declares {}", arg.shape().size(), d.size());
      for (size_t i = 0; why.empty() && i < d.size(); ++i)
        if (d[i] >= 0 && d[i] != arg.shape()[i])
          why = fmt::format("dim {} is {}, the kernel fixes it to {}", i, arg.shape()[i], d[i]);
      if (!why.empty())
        throw ArgumentError(cl, name,
                            fmt::format("tensor argument {} has shape {}, the kernel declares {}: "
                                        "{}",
                                        p, dims_str(arg.shape()), spec_str(d), why));
    }
    if (spec && spec->dtype != DT_BOTTOM && spec->dtype != arg.dtype())
      throw ArgumentError(cl, name,
                          fmt::format("tensor argument {} has dtype {}, the kernel declares {}", p,
                                      pto::name(arg.dtype()), pto::name(spec->dtype)));
    return d;
  }

  /// Throws when a kernel is being traced on this thread: a call from inside a trace would run
  /// once, while tracing, and never again (and a kernel calling itself would wait on its own
  /// lock forever).
  void check_not_tracing(const std::source_location &cl) const {
    if (t_tracing.empty())
      return;
    const Tracing &outer = t_tracing.back();
    if (std::any_of(t_tracing.begin(), t_tracing.end(),
                    [this](const Tracing &t) { return t.core == this; }))
      throw ArgumentError(cl, name,
                          fmt::format("kernel '{}' is called while it is being traced: a kernel "
                                      "cannot call itself (its function is traced once, not "
                                      "recursively); write the recursion as a loop or a plain "
                                      "C++ helper taking pto::Tensor",
                                      name));
    throw ArgumentError(cl, name,
                        fmt::format("kernel '{}' is called while kernel '{}' is being traced: "
                                    "kernels do not nest; call the function given to pto::jit "
                                    "directly (with pto::Tensor arguments) to trace its ops into "
                                    "'{}'",
                                    name, *outer.name, *outer.name));
  }

  /// Signature key: dtypes, static dims, constants and the world's size.
  std::string signature(const std::vector<HostTensor *> &tensors,
                        const std::vector<std::vector<int64_t>> &decl,
                        const std::vector<std::string> &constants, int world_pes) const {
    std::string key;
    for (size_t p = 0; p < tensors.size(); ++p) {
      const HostTensor &t = *tensors[p];
      key += short_name(t.dtype()) + "[";
      for (size_t i = 0; i < decl[p].size(); ++i)
        key += (decl[p][i] == DYNAMIC ? std::string("?") : std::to_string(t.shape()[i])) + ",";
      key += "]";
    }
    for (auto &c : constants)
      key += "|" + c;
    return key + fmt::format("|pes={}", world_pes);
  }

  std::shared_ptr<Entry> trace_and_compile(const std::vector<HostTensor *> &tensors,
                                           const std::vector<std::vector<int64_t>> &decl,
                                           const std::vector<std::string> &constants,
                                           const TraceFn &trace, int world_pes,
                                           const std::map<std::string, int> &groups,
                                           const std::source_location &cl);
};

std::shared_ptr<Entry> KernelCore::Impl::trace_and_compile(
    const std::vector<HostTensor *> &tensors, const std::vector<std::vector<int64_t>> &decl,
    const std::vector<std::string> &constants, const TraceFn &trace, int world_pes,
    const std::map<std::string, int> &groups, const std::source_location &cl) {
  auto t0 = std::chrono::steady_clock::now();
  // Settings first: a bad environment variable fails before any work (even one this kernel's
  // options override, so that a typo is never silently ignored).
  const RunMode mode = opts.run_mode.value_or(run_mode_from_env(cl, name));
  const auto copts = codegen::CompileOptions::from_env(cl, name);
  TraceInput in;
  in.name = name;
  in.constants = constants;
  in.world_pes = world_pes;
  in.groups = groups;
  for (size_t p = 0; p < tensors.size(); ++p) {
    in.dtypes.push_back(tensors[p]->dtype());
    in.dims.push_back(tensors[p]->shape());
    for (size_t i = 0; i < decl[p].size(); ++i)
      if (decl[p][i] == DYNAMIC)
        in.dims[p][i] = DYNAMIC;
  }
  Traced traced;
  {
    TracingScope tracing(this, name);
    traced = trace_program(in, trace);
  }
  auto e = std::make_shared<Entry>();
  e->dtypes = in.dtypes;
  e->groups = std::move(traced.groups_looked_up);
  bool compiled = false;
  const codegen::Backend backend = [&](std::shared_ptr<const codegen::PlannedProgram> pp,
                                       const codegen::StageDump &dump) {
    return mode == RunMode::Interpret ? codegen::make_interpreter(std::move(pp))
                                      : codegen::compile_jit(*pp, copts, dump, &compiled);
  };
  codegen::Compiled c;
  try {
    c = codegen::compile_program(std::move(traced.program), copts, backend);
  } catch (const CompileError &err) {
    // LLVM knows no user line: the kernel call is where its failure surfaces.
    if (err.where() != "<codegen>")
      throw;
    throw CompileError(cl, name, err.op() + ": " + err.detail());
  }
  e->exe = std::move(c.exe);
  auto t1 = std::chrono::steady_clock::now();
  stats.traces++;
  if (compiled)
    stats.compiles++;
  stats.compile_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
  last_ir = c.planned->printed;
  return e;
}

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
  k.check_not_tracing(call_loc);
  if (tensors.empty())
    throw ArgumentError(call_loc, k.name, "expected at least 1 tensor argument, got 0");
  if (k.opts.specs.size() > tensors.size())
    throw ArgumentError(k.loc, k.name,
                        fmt::format("JitOptions::specs has {} entries, but the call at {} passes "
                                    "{} tensor arguments; give at most one TensorSpec per tensor "
                                    "parameter",
                                    k.opts.specs.size(), format_location(call_loc),
                                    tensors.size()));
  std::vector<std::vector<int64_t>> decl;
  for (size_t p = 0; p < tensors.size(); ++p)
    decl.push_back(k.declared(p, *tensors[p], call_loc));
  // The trace may unroll loops over PEs (collectives): the world's size is part of the key, and
  // the sizes of the groups the trace looked up must match (Entry::groups).
  pto_ctx *ctx = runtime::current_ctx(call_loc);
  const int world_pes = runtime::n_pes(ctx);
  const auto groups = runtime::group_sizes(ctx);
  const std::string key = k.signature(tensors, decl, constants, world_pes);

  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lk(k.mu);
    auto &entries = k.cache[key];
    for (auto &e : entries)
      if (groups_match(*e, world_pes, groups))
        entry = e;
    if (!entry) {
      entry = k.trace_and_compile(tensors, decl, constants, trace, world_pes, groups, call_loc);
      entries.push_back(entry);
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
    } catch (...) { // NOLINT(bugprone-empty-catch): the first error is the one to report
    }
    throw;
  }
  runtime::end_call(ctx); // throws the typed error a runtime call recorded
}

} // namespace pto::detail
