// kernel.cpp - pto::jit's host side: signature keys, tracing, compile-once, argument checks
// and the call into an Executable on the calling PE.
#include "pto/env.h"
#include "pto/jit.h"
#include "pto/runtime/context.h"
#include "pto/runtime/pool.h"

#include "driver/trace.h"
#include "passes/pipeline.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
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

/// A trace of one signature in flight (KernelCore::Impl::in_flight). The PEs of the world that
/// started it wait for it; callers from other worlds trace on their own.
struct InFlight {
  const void *world = nullptr;
  bool done = false;
  std::exception_ptr error; ///< set when the trace or the compile failed
};

/// What one trace produced, published under the kernel's lock.
struct TraceResult {
  std::shared_ptr<Entry> entry;
  bool compiled = false;
  double ms = 0;
  std::string printed;
};

/// At most this many traces of one kernel run at once (concurrent first calls from threads of
/// different worlds; a trace that starts a thread calling the kernel again adds one per level).
constexpr int kMaxTracesInFlight = 64;

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
  const auto m = env::read_choice(env::var("PTO_RUN_MODE"), loc,
                                  fmt::format(" (tracing kernel '{}')", kernel));
  return m == "interpret" ? RunMode::Interpret : RunMode::Jit;
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

/// A recent call of a kernel on this thread: KernelCore::call's fast path. A call whose kernel,
/// world and groups (one version number: runtime::groups_version), argument dtypes and shapes
/// and constants equal a recent call's runs that call's program without building the signature
/// key, the group map or the declared dims: those are functions of what is compared here.
struct RecentCall {
  uint64_t core = 0;         ///< KernelCore::Impl::id; 0: empty
  uint64_t groups = 0;       ///< runtime::groups_version of the world at that call
  std::vector<int64_t> args; ///< arg_key()
  std::vector<std::string> constants;
  std::weak_ptr<Entry> entry; ///< not owning: the kernel's cache decides the program's life
};
constexpr size_t kRecentCalls = 4;
thread_local std::array<RecentCall, kRecentCalls> t_recent;
thread_local size_t t_recent_next = 0;
std::atomic<uint64_t> g_next_core_id{1};

/// The tensor count, then per tensor its dtype, rank and dims, into `out` (reused: no
/// allocation once it has grown).
void arg_key(HostTensor *const *tensors, size_t n, std::vector<int64_t> &out) {
  out.clear();
  out.push_back(int64_t(n));
  for (size_t p = 0; p < n; ++p) {
    const auto &shape = tensors[p]->shape();
    out.push_back(int64_t(tensors[p]->dtype()));
    out.push_back(int64_t(shape.size()));
    out.insert(out.end(), shape.begin(), shape.end());
  }
}

bool same_constants(const std::vector<std::string> &a, const std::string *b, size_t n) {
  if (a.size() != n)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return false;
  return true;
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
  /// Process-wide unique (never reused, unlike an address): the key of RecentCall.
  const uint64_t id = g_next_core_id.fetch_add(1, std::memory_order_relaxed);
  std::atomic<int64_t> calls{0}; ///< KernelStats::calls, counted without the lock
  std::string name;
  JitOptions opts;
  std::source_location loc;
  /// Guards cache, in_flight, stats and last_ir; never held while user code (the traced
  /// function) or the compiler runs.
  mutable std::mutex mu;
  std::condition_variable traced_cv; ///< notified when a trace in flight ends
  /// Specializations by signature key; several when they differ in the groups they looked up.
  std::map<std::string, std::vector<std::shared_ptr<Entry>>> cache;
  /// Traces running now, by signature key.
  std::map<std::string, std::vector<std::shared_ptr<InFlight>>> in_flight;
  int n_in_flight = 0;
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

  TraceResult trace_and_compile(const std::vector<HostTensor *> &tensors,
                                const std::vector<std::vector<int64_t>> &decl,
                                const std::vector<std::string> &constants,
                                const std::function<void(const std::vector<Tensor> &)> &trace,
                                int world_pes, const std::map<std::string, int> &groups,
                                const std::source_location &cl);

  /// The program for `key`: cached, traced by a PE of the same world (waited for), or traced
  /// here without holding the lock (the first trace of a signature to finish is published).
  std::shared_ptr<Entry>
  find_or_trace(const std::string &key, const void *world, const std::vector<HostTensor *> &tensors,
                const std::vector<std::vector<int64_t>> &decl,
                const std::vector<std::string> &constants,
                const std::function<void(const std::vector<Tensor> &)> &trace, int world_pes,
                const std::map<std::string, int> &groups, const std::source_location &cl);
};

TraceResult KernelCore::Impl::trace_and_compile(
    const std::vector<HostTensor *> &tensors, const std::vector<std::vector<int64_t>> &decl,
    const std::vector<std::string> &constants,
    const std::function<void(const std::vector<Tensor> &)> &trace, int world_pes,
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
  return {std::move(e), compiled, std::chrono::duration<double, std::milli>(t1 - t0).count(),
          c.planned->printed};
}

std::shared_ptr<Entry> KernelCore::Impl::find_or_trace(
    const std::string &key, const void *world, const std::vector<HostTensor *> &tensors,
    const std::vector<std::vector<int64_t>> &decl, const std::vector<std::string> &constants,
    const std::function<void(const std::vector<Tensor> &)> &trace, int world_pes,
    const std::map<std::string, int> &groups, const std::source_location &cl) {
  std::unique_lock lk(mu);
  auto cached = [&]() -> std::shared_ptr<Entry> {
    for (auto &e : cache[key])
      if (groups_match(*e, world_pes, groups))
        return e;
    return nullptr;
  };
  for (;;) {
    if (auto e = cached())
      return e;
    // A PE of this world is tracing the signature: wait for it, so that the PEs of one
    // World::run trace and compile once. Its trace never waits for this PE (a thread it
    // starts belongs to another world and does not wait here).
    std::shared_ptr<InFlight> sibling;
    for (auto &f : in_flight[key])
      if (f->world == world)
        sibling = f;
    if (!sibling)
      break;
    traced_cv.wait(lk, [&] { return sibling->done; });
    if (sibling->error)
      std::rethrow_exception(sibling->error);
  }
  if (n_in_flight >= kMaxTracesInFlight)
    throw ArgumentError(cl, name,
                        fmt::format("kernel '{}' already has {} traces in flight: its function "
                                    "starts a thread that calls the kernel again while it is "
                                    "being traced (a kernel cannot call itself), or more than "
                                    "{} threads outside one World::run call it for the first "
                                    "time at once",
                                    name, n_in_flight, kMaxTracesInFlight));
  auto mine = std::make_shared<InFlight>();
  mine->world = world;
  in_flight[key].push_back(mine);
  n_in_flight++;
  TraceResult r;
  lk.unlock();
  try {
    r = trace_and_compile(tensors, decl, constants, trace, world_pes, groups, cl);
  } catch (...) {
    mine->error = std::current_exception();
  }
  lk.lock();
  n_in_flight--;
  auto &flights = in_flight[key];
  flights.erase(std::find(flights.begin(), flights.end(), mine));
  mine->done = true;
  traced_cv.notify_all();
  if (mine->error)
    std::rethrow_exception(mine->error);
  stats.traces++;
  if (r.compiled)
    stats.compiles++;
  stats.compile_ms += r.ms;
  // Another world's trace of the signature may have finished first: its program is the one
  // every call uses.
  if (auto e = cached())
    return e;
  last_ir = std::move(r.printed);
  cache[key].push_back(r.entry);
  return r.entry;
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
  KernelStats s = impl_->stats;
  s.calls = impl_->calls.load(std::memory_order_relaxed);
  return s;
}

std::string KernelCore::last_ir() const {
  std::lock_guard lk(impl_->mu);
  return impl_->last_ir;
}

void KernelCore::call(HostTensor *const *tensor_args, size_t n_tensors,
                      const std::string *constant_args, size_t n_constants, const TraceFn &trace,
                      std::source_location call_loc) {
  Impl &k = *impl_;
  k.check_not_tracing(call_loc);
  if (n_tensors == 0)
    throw ArgumentError(call_loc, k.name, "expected at least 1 tensor argument, got 0");
  pto_ctx *ctx = runtime::current_ctx(call_loc, &k.name);
  // The version first: a group made while this call looks up its program makes the next call
  // miss (conservative), never hit a program traced for other group sizes.
  const uint64_t groups_version = runtime::groups_version(ctx);
  thread_local std::vector<int64_t> t_args;
  arg_key(tensor_args, n_tensors, t_args);
  std::shared_ptr<Entry> entry;
  for (RecentCall &r : t_recent)
    if (r.core == k.id && r.groups == groups_version && r.args == t_args &&
        same_constants(r.constants, constant_args, n_constants)) {
      entry = r.entry.lock();
      break;
    }
  if (!entry) {
    const std::vector<HostTensor *> tensors(tensor_args, tensor_args + n_tensors);
    const std::vector<std::string> constants(constant_args, constant_args + n_constants);
    if (k.opts.specs.size() > tensors.size())
      throw ArgumentError(k.loc, k.name,
                          fmt::format("JitOptions::specs has {} entries, but the call at {} "
                                      "passes {} tensor arguments; give at most one TensorSpec "
                                      "per tensor parameter",
                                      k.opts.specs.size(), format_location(call_loc),
                                      tensors.size()));
    std::vector<std::vector<int64_t>> decl;
    for (size_t p = 0; p < tensors.size(); ++p)
      decl.push_back(k.declared(p, *tensors[p], call_loc));
    // The trace may unroll loops over PEs (collectives): the world's size is part of the key,
    // and the sizes of the groups the trace looked up must match (Entry::groups).
    const int world_pes = runtime::n_pes(ctx);
    const auto groups = runtime::group_sizes(ctx);
    const std::string key = k.signature(tensors, decl, constants, world_pes);
    const std::function<void(const std::vector<Tensor> &)> trace_fn =
        [&trace](const std::vector<Tensor> &params) { trace(params); };
    entry = k.find_or_trace(key, runtime::world_id(ctx), tensors, decl, constants, trace_fn,
                            world_pes, groups, call_loc);
    // Argument checks against the traced signature (key equality covers static dims).
    for (size_t p = 0; p < tensors.size(); ++p)
      if (tensors[p]->dtype() != entry->dtypes[p])
        throw ArgumentError(call_loc, k.name,
                            fmt::format("tensor argument {} has dtype {}, traced with {}", p,
                                        name(tensors[p]->dtype()), name(entry->dtypes[p])));
    RecentCall &slot = t_recent[t_recent_next++ % kRecentCalls];
    slot.core = k.id;
    slot.groups = groups_version;
    slot.args = t_args;
    slot.constants = constants;
    slot.entry = entry;
  }
  k.calls.fetch_add(1, std::memory_order_relaxed);

  // Pointers and dims on the stack for the usual few tensors of small rank.
  constexpr size_t kInline = 16;
  std::array<void *, kInline> ptr_buf{};
  std::array<int64_t, 4 * kInline> dim_buf{};
  std::vector<void *> ptr_heap;
  std::vector<int64_t> dim_heap;
  const size_t n_dims = t_args.size() - 1 - 2 * n_tensors;
  void **ptrs = ptr_buf.data();
  int64_t *dims = dim_buf.data();
  if (n_tensors > ptr_buf.size()) {
    ptr_heap.resize(n_tensors);
    ptrs = ptr_heap.data();
  }
  if (n_dims > dim_buf.size()) {
    dim_heap.resize(n_dims);
    dims = dim_heap.data();
  }
  for (size_t p = 0, d = 0; p < n_tensors; ++p) {
    ptrs[p] = tensor_args[p]->data();
    for (auto x : tensor_args[p]->shape())
      dims[d++] = x;
  }
  runtime::init_pool(call_loc); // PTO_NUM_THREADS, read once
  const runtime::PoolSeat seat; // this PE runs kernel code: one thread of the pool's budget
  runtime::begin_call(ctx, &entry->exe->sites(), k.name.c_str(), call_loc);
  try {
    entry->exe->run(ctx, ptrs, dims);
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
