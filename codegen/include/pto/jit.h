// jit.h - pto::jit: a kernel traced on its first call and compiled once per signature, as
// PyPTO `@pypto.jit` (reference §1.2-1.3).
//
//   auto softmax = pto::jit("softmax", [](pto::Tensor x, pto::Tensor y) { ... });
//   softmax(x_host, y_host);        // traces, compiles, runs; later calls reuse the code
//
// Parameters: tensors first (pto::Tensor; the caller passes pto::HostTensor, outputs are written
// in place), then compile-time constants (arithmetic types or std::string; a new value means a
// new compilation). Each tensor dim is fixed, STATIC (default: baked in, a new size recompiles)
// or DYNAMIC (symbolic; any size runs the same code), given per parameter in JitOptions::specs.
// A call made inside runtime::World::run runs on that PE; a call outside runs on one PE.
//
// Specializations: a kernel keeps one traced program per signature (dtypes, fixed and STATIC
// dims, constants, the number of PEs, and the sizes of the communication groups the trace looked
// up) for as long as the Kernel object lives; calling it again with the same signature, in the
// same or another World, runs the same program without tracing. Compiled machine code is shared
// between kernels through a process-wide cache keyed by the program's structural form and
// bounded by an LRU on bytes (set_jit_cache_limit, PTO_JIT_CACHE_MB, default 64 MiB). Code is
// freed when neither the cache nor a live kernel holds it, so creating and dropping kernels in a
// loop runs in bounded memory. A live kernel holds the code of every specialization it traced:
// one called with ever new STATIC sizes grows with them (declare such dims DYNAMIC).
//
// Kernels do not nest: calling any kernel while a kernel is being traced on the same thread
// (from inside the function given to pto::jit, including the kernel itself) throws
// ArgumentError at that call, naming both kernels. To reuse a kernel's body inside another,
// call its function directly with pto::Tensor arguments: its ops are traced into the caller.
//
// Threads: no lock is held while the kernel's function is traced or compiled. The PEs of one
// World::run that call a kernel for the first time wait for the one PE that traces it (one trace,
// one compile); calls from other threads (each outside World::run is its own 1-PE world) trace
// concurrently and the first trace of a signature to finish is the program every call runs (the
// JIT still compiles it once). At most 64 traces of one kernel are in flight at once: the next
// is an ArgumentError naming the kernel, which is what a function that starts a thread calling
// its own kernel (recursion through threads) gets instead of a hang.
//
// Environment, read whenever a kernel traces a new signature (an unknown value is an
// ArgumentError at that call, listing the values that exist):
//   PTO_RUN_MODE=jit|interpret  default executor (JitOptions::run_mode overrides it)
//   PTO_DUMP=ir,llvm,asm        write those stages of every JIT compile to PTO_DUMP_DIR (default
//                               "."), as NAME.HASH.ir / .ll / .s: NAME is the kernel name with
//                               bytes outside [A-Za-z0-9_-] escaped as %XX, HASH (8 hex digits)
//                               tells the kernel's specializations apart. A file that cannot
//                               be written is skipped with one warning on stderr.
//   PTO_JIT_CACHE_MB=N          the compile cache's bound in MiB (0: keep no unused code)
#pragma once

#include "pto/error.h"
#include "pto/hints.h"
#include "pto/host_tensor.h"
#include "pto/tensor.h"
#include "pto/trace_constant.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace pto {

/// Dim markers for TensorSpec::dims, as PyPTO `pypto.STATIC` / `pypto.DYNAMIC`.
inline constexpr int64_t STATIC = -1;
inline constexpr int64_t DYNAMIC = -2;

/// The declared shape and dtype of one tensor parameter (PyPTO's `Tensor[...]` annotation).
struct TensorSpec {
  std::vector<int64_t> dims;  ///< per dim: a size (fixed), STATIC or DYNAMIC; empty: all STATIC
  DataType dtype = DT_BOTTOM; ///< DT_BOTTOM: taken from the first call's argument
};

/// How a kernel executes: machine code from LLVM, or the reference interpreter (PyPTO's SIM).
enum class RunMode { Jit, Interpret };

struct JitOptions {
  /// Per tensor parameter, in order; missing entries are all STATIC. More entries than the
  /// kernel has tensor parameters is an ArgumentError at the first call.
  std::vector<TensorSpec> specs = {};
  /// Default: PTO_RUN_MODE (jit or interpret; unset or empty: Jit). PTO_RUN_MODE is checked
  /// even when this is set.
  std::optional<RunMode> run_mode = {};
  /// PyPTO `jit(pass_options={...})` (pto/hints.h): accepted, changes nothing ptojit computes.
  PassOptions pass_options = {};
};

/// Counters of one kernel (all PEs together).
struct KernelStats {
  int traces = 0;        ///< signatures traced
  int compiles = 0;      ///< programs compiled or loaded from the on-disk cache (a structural
                         ///< hit in the in-memory cache does not count)
  double compile_ms = 0; ///< total trace + compile time
  int64_t calls = 0;
};

/// Counters of the process-wide cache of JIT-compiled programs and of the JIT memory in use.
struct JitCacheStats {
  int64_t entries = 0; ///< programs in the cache
  int64_t bytes = 0; ///< their size as the bound counts it: JIT memory + key + sites + 12 KiB each
                     ///< for the JIT's bookkeeping (measured, LLVM 19)
  int64_t limit_bytes = 0;     ///< the bound in force (set_jit_cache_limit, PTO_JIT_CACHE_MB)
  int64_t hits = 0;            ///< compiles answered by the cache
  int64_t misses = 0;          ///< programs compiled or loaded from the on-disk cache
  int64_t evictions = 0;       ///< entries dropped to stay within the bound
  int64_t live_programs = 0;   ///< JIT-compiled programs alive: cached and/or held by a kernel
  int64_t live_code_bytes = 0; ///< JIT memory (code and data, page-rounded) they hold
  int64_t live_mappings = 0;   ///< allocations (mmap calls) holding that memory
  // The on-disk cache of compiled objects (PTO_CACHE, PTO_CACHE_DIR, PTO_CACHE_MAX_MB), this
  // process's counts. A program the in-memory cache lacks is looked up there before compiling.
  int64_t disk_hits = 0;      ///< programs linked from a cache file instead of compiled
  int64_t disk_misses = 0;    ///< lookups that found no file (the program was compiled)
  int64_t disk_rejected = 0;  ///< files refused (corrupt, truncated, stale), deleted, rebuilt
  int64_t disk_writes = 0;    ///< files stored
  int64_t disk_evictions = 0; ///< files removed to keep the directory within PTO_CACHE_MAX_MB
  int64_t disk_errors = 0;    ///< I/O failures; each skipped the disk cache (warned once)
};

/// A snapshot of the compile cache's counters (thread-safe).
JitCacheStats jit_cache_stats();

/// Bounds the compile cache to `bytes` (0: cache nothing, so code lives only while a kernel
/// holds it), evicting least recently used programs at once; std::nullopt returns to
/// PTO_JIT_CACHE_MB, or the default of 64 MiB. Overrides PTO_JIT_CACHE_MB for the rest of the
/// process. An evicted program that a live kernel still holds stays alive (and runs) until that
/// kernel is destroyed. Throws ArgumentError for a negative `bytes`.
void set_jit_cache_limit(std::optional<int64_t> bytes,
                         std::source_location loc = std::source_location::current());

namespace detail {

class KernelCore {
public:
  KernelCore(std::string name, JitOptions opts, std::source_location loc);
  ~KernelCore();
  /// A non-owning reference to the callable that traces the kernel's function with its
  /// parameters (valid for the duration of one call; no allocation).
  class TraceFn {
  public:
    template <class F>
    explicit TraceFn(F &f)
        : obj_(&f),
          fn_([](void *o, const std::vector<Tensor> &params) { (*static_cast<F *>(o))(params); }) {}
    void operator()(const std::vector<Tensor> &params) const { fn_(obj_, params); }

  private:
    void *obj_;
    void (*fn_)(void *, const std::vector<Tensor> &);
  };
  /// Checks the arguments, traces and compiles on a new signature, then runs on the calling PE.
  /// `tensors` and `constants` point at `n_tensors` / `n_constants` elements.
  void call(HostTensor *const *tensors, size_t n_tensors, const std::string *constants,
            size_t n_constants, const TraceFn &trace, std::source_location call_loc);
  KernelStats stats() const;
  /// The printed IR of the most recent trace ("" before the first call).
  std::string last_ir() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The first argument of a kernel call (always a tensor); remembers the caller's line so that
/// argument errors point at the call.
struct FirstTensor {
  FirstTensor(HostTensor &t, std::source_location l = std::source_location::current())
      : tensor(t), loc(l) {}
  FirstTensor(const HostTensor &t, std::source_location l = std::source_location::current())
      : tensor(const_cast<HostTensor &>(t)), loc(l) {}
  HostTensor &tensor;
  std::source_location loc;
};

template <class T>
inline constexpr bool is_host_tensor_v = std::is_same_v<std::remove_cvref_t<T>, HostTensor>;

// constant_repr: pto/trace_constant.h.

} // namespace detail

/// A traced kernel. Call it like the function it wraps, with HostTensors for the tensor
/// parameters. Thread-safe: every PE may call it at once; it compiles once (see "Threads" at the
/// top of this file).
template <class Fn> class Kernel {
public:
  Kernel(std::string name, Fn fn, JitOptions opts, std::source_location loc)
      : fn_(std::move(fn)),
        core_(std::make_shared<detail::KernelCore>(std::move(name), std::move(opts), loc)) {}

  /// Runs the kernel. Arguments whose dtype or rank differ from an earlier call are traced again
  /// (a new specialization, as PyPTO's cache key). ArgumentError at the call's line, naming the
  /// kernel, for arguments that contradict a declared JitOptions spec (its dtype, rank or a
  /// fixed dim; the message shows the argument's shape and the declared one), for a call while
  /// a kernel is being traced on this thread or with 64 of its traces in flight (see the top of
  /// this file), and for a bad
  /// PTO_RUN_MODE / PTO_DUMP / PTO_JIT_CACHE_MB; ArgumentError at the pto::jit line when
  /// JitOptions::specs has more entries than the call has tensors. Also throws any pto::Error
  /// the trace raises, RuntimeError/DistributedError/DeadlockError raised while running (those
  /// without an op of their own, such as PEs that declared different shmem tensors at kernel
  /// entry, start with the call's line and name the kernel), and CompileError if LLVM fails.
  template <class... Args> void operator()(detail::FirstTensor first, Args &&...rest) {
    call(first.loc, first.tensor, rest...);
  }
  /// Counters of this kernel's traces and compiles (all zero for a moved-from Kernel).
  KernelStats stats() const { return core_ ? core_->stats() : KernelStats{}; }
  /// The IR of the last trace ("" for a moved-from Kernel).
  std::string last_ir() const { return core_ ? core_->last_ir() : std::string(); }

private:
  template <class... Args> void call(std::source_location loc, Args &...args) {
    // Moves (defaulted) leave no core behind: calling a moved-from Kernel is an ArgumentError,
    // never a null dereference. Copies share the core (and its specializations).
    if (!core_)
      throw ArgumentError(loc, "jit",
                          "this pto::Kernel was moved from; call the Kernel it was moved into "
                          "(or keep a copy: copies share the compiled specializations)");
    // On the stack: a cache-hit call allocates nothing here (constants' text aside).
    constexpr size_t kTensors = (size_t(0) + ... + (detail::is_host_tensor_v<Args> ? 1 : 0));
    constexpr size_t kConstants = sizeof...(Args) - kTensors;
    std::array<HostTensor *, kTensors> tensors{};
    std::array<std::string, kConstants> constants{};
    size_t nt = 0, nc = 0;
    (collect(args, tensors.data(), nt, constants.data(), nc), ...);
    auto trace = [&](const std::vector<Tensor> &params) {
      invoke(std::index_sequence_for<Args...>{}, params, args...);
    };
    core_->call(tensors.data(), kTensors, constants.data(), kConstants,
                detail::KernelCore::TraceFn(trace), loc);
  }
  template <class A>
  static void collect(A &a, HostTensor **ts, size_t &nt, std::string *cs, size_t &nc) {
    if constexpr (detail::is_host_tensor_v<A>)
      ts[nt++] = const_cast<HostTensor *>(&a);
    else
      cs[nc++] = detail::constant_repr(a);
  }
  template <class... Args, size_t... I>
  void invoke(std::index_sequence<I...>, const std::vector<Tensor> &params, Args &...args) {
    constexpr std::array<bool, sizeof...(Args)> is_t{detail::is_host_tensor_v<Args>...};
    static_assert(
        std::is_invocable_v<Fn &,
                            std::conditional_t<detail::is_host_tensor_v<Args>, Tensor, Args &>...>,
        "pto::jit: the kernel function must take pto::Tensor for each HostTensor "
        "argument, then the constants");
    fn_(pick<I>(is_t, params, args)...);
  }
  template <size_t I, size_t N, class A>
  static decltype(auto) pick(const std::array<bool, N> &is_t, const std::vector<Tensor> &params,
                             A &a) {
    if constexpr (detail::is_host_tensor_v<A>) {
      size_t k = 0;
      for (size_t j = 0; j < I; ++j)
        k += is_t[j] ? 1 : 0;
      return Tensor(params[k]);
    } else {
      return static_cast<A &>(a);
    }
  }

  Fn fn_;
  std::shared_ptr<detail::KernelCore> core_;
};

/// Wraps `fn` as a kernel named `name` (used in dumps and messages).
template <class Fn>
Kernel<Fn> jit(std::string name, Fn fn, JitOptions opts = {},
               std::source_location loc = std::source_location::current()) {
  return Kernel<Fn>(std::move(name), std::move(fn), std::move(opts), loc);
}

} // namespace pto
