// context.cpp - The per-PE context: finding it, bracketing a kernel call, recording typed errors,
// scratch memory, and the small ABI entry points that only read or write the context.
#include "pto/runtime/context.h"

#include "pto/env.h"
#include "pto/runtime/world.h"

#include "boundary.h"
#include "world_state.h"

#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <new>

namespace pto::runtime {

namespace detail {
// Set by World::run on each PE thread; read by current_ctx().
thread_local pto_ctx *tls_ctx = nullptr;

void site_location(const pto_ctx *ctx, int32_t site, const char *default_op, std::string &where,
                   std::string &op) {
  where = "<runtime>";
  op = default_op ? default_op : "";
  if (!ctx || !ctx->sites || site < 0 || size_t(site) >= ctx->sites->size()) {
    // No site of its own (scratch memory, kernel entry and exit): the user's call of the kernel.
    if (ctx && ctx->call_loc.file_name() && *ctx->call_loc.file_name()) {
      where = format_location(ctx->call_loc);
      if (ctx->kernel_name)
        op = ctx->kernel_name;
    }
    return;
  }
  const std::string &s = (*ctx->sites)[size_t(site)];
  // "file.cpp:12: shmem_put": the op follows the last ": ".
  if (auto cut = s.rfind(": "); cut != std::string::npos) {
    where = s.substr(0, cut);
    op = s.substr(cut + 2);
  } else {
    where = s;
  }
}

std::string describe(const std::exception_ptr &e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception &x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

int32_t record_error(pto_ctx *ctx, std::exception_ptr e, bool released, bool abort) {
  const bool first = ctx->status == PTO_OK;
  if (first) {
    ctx->status = PTO_ERR;
    ctx->error = std::move(e);
    ctx->error_released = released;
  }
  if (!released && abort)
    ctx->world->mark_failed(ctx->pe, first ? describe(ctx->error) : "a second error");
  return PTO_ERR;
}

int32_t fail_released(pto_ctx *ctx, int32_t site, const char *default_op) {
  std::string where, op;
  site_location(ctx, site, default_op, where, op);
  const int failed = ctx->world->first_failed_pe.load(std::memory_order_acquire);
  return record_error(ctx,
                      std::make_exception_ptr(DistributedError(
                          where, op,
                          "PE " + std::to_string(ctx->pe) + " released because " +
                              (failed >= 0 ? "PE " + std::to_string(failed) + " failed"
                                           : std::string("the world was aborted")))),
                      /*released=*/true);
}
} // namespace detail

namespace {
// The 1-PE world of a thread that calls a kernel outside World::run. Per thread rather than per
// process, so two host threads calling kernels never share a context.
pto_ctx *default_ctx(const std::source_location &loc, const std::string *kernel) {
  thread_local std::unique_ptr<World> world;
  thread_local pto_ctx *ctx = nullptr;
  if (!ctx) {
    // The World constructor checks the environment as "(creating a World)"; for a kernel call
    // the kernel's own check (codegen/driver/kernel.cpp) runs first here, with its context.
    if (kernel)
      env::check_all(loc, fmt::format(" (tracing kernel '{}')", *kernel));
    world = std::make_unique<World>(1, WorldOptions{}, loc);
    ctx = world->context(0);
  }
  return ctx;
}

// The kernel call's span on the timeline, when the world is tracing.
void record_kernel_event(pto_ctx *ctx) noexcept {
  if (!ctx->world->tracing.load(std::memory_order_relaxed) || ctx->call_name.empty())
    return;
  detail::record_trace(ctx, [ctx] {
    detail::TraceEvent e;
    e.name = "kernel";
    e.cat = "kernel";
    e.label = std::move(ctx->call_name);
    e.ts_ns = ctx->call_start_ns;
    e.dur_ns = ctx->world->trace_now_ns() - ctx->call_start_ns;
    return e;
  });
  ctx->call_name.clear();
}
} // namespace

void detail::free_scratch(pto_ctx *ctx) {
  if (ctx->scratch.empty())
    return; // nothing allocated (or already released): keep what the last call left
  for (const auto &b : ctx->scratch_kept)
    ::operator delete(b.p, std::align_val_t(64));
  ctx->scratch_kept = std::move(ctx->scratch);
  ctx->scratch.clear();
}

pto_ctx *current_ctx(std::source_location loc, const std::string *kernel) {
  if (detail::tls_ctx)
    return detail::tls_ctx;
  try {
    return default_ctx(loc, kernel);
  } catch (...) {
    detail::rethrow_as_pto_error("<runtime>", "current_ctx", "creating the implicit 1-PE world");
  }
}

void begin_call(pto_ctx *ctx, const std::vector<std::string> *sites, const char *kernel_name,
                std::source_location call_loc) {
  ctx->status = PTO_OK;
  ctx->error = nullptr;
  ctx->error_released = false;
  ctx->sites = sites;
  ctx->kernel_name = kernel_name;
  ctx->call_loc = call_loc;
  ctx->world->progress.bump();
  if (ctx->world->tracing.load(std::memory_order_relaxed)) {
    ctx->call_start_ns = ctx->world->trace_now_ns();
    detail::host_boundary(call_loc, kernel_name ? kernel_name : "kernel", "starting the trace",
                          [&] { ctx->call_name = kernel_name ? kernel_name : "kernel"; });
  }
}

void end_call(pto_ctx *ctx) {
  record_kernel_event(ctx);
  detail::free_scratch(ctx);
  if (ctx->status == PTO_OK) {
    ctx->sites = nullptr;
    ctx->kernel_name = nullptr;
    ctx->call_loc = {};
    ctx->world->progress.bump();
    return;
  }
  std::string where, op;
  detail::site_location(ctx, -1, "kernel", where, op); // the kernel call, for wrapped errors
  ctx->sites = nullptr;
  ctx->kernel_name = nullptr;
  ctx->call_loc = {};
  ctx->world->progress.bump();
  // ctx->error stays until the next begin_call: World::run tells a released error (secondary)
  // from a primary one by its identity.
  std::exception_ptr e = ctx->error;
  ctx->status = PTO_OK;
  // Outside World::run nobody else can be blocked on this world: make it usable again.
  if (!detail::tls_ctx)
    ctx->world->reset_for_run();
  if (!e)
    throw InternalError(where, op, "status PTO_ERR without a recorded error");
  try {
    std::rethrow_exception(e);
  } catch (...) { // a pto::Error as recorded; anything else a runtime entry point threw, wrapped
    detail::rethrow_as_pto_error(where, op, "running the kernel");
  }
}

int my_pe(const pto_ctx *ctx) { return ctx->pe; }
int n_pes(const pto_ctx *ctx) { return ctx->world->n_pes; }

const void *world_id(const pto_ctx *ctx) { return ctx->world; }

uint64_t groups_version(const pto_ctx *ctx) noexcept {
  return ctx->world->groups_version.load(std::memory_order_acquire);
}

std::map<std::string, int> group_sizes(const pto_ctx *ctx) {
  try {
    std::map<std::string, int> out;
    std::lock_guard lock(ctx->world->registry_mu);
    for (const auto &[name, g] : ctx->world->registry)
      out[name] = g->n_pes;
    return out;
  } catch (...) {
    detail::rethrow_as_pto_error("<runtime>", "group_sizes", "listing the groups");
  }
}

} // namespace pto::runtime

using namespace pto::runtime;
using pto::runtime::detail::abi_boundary;
using pto::runtime::detail::fail;

extern "C" {

int32_t pto_rt_my_pe(pto_ctx *ctx, int32_t group) {
  // Before kernel entry (or for an undeclared group) the group is the world.
  if (group >= 0 && size_t(group) < ctx->group_pe.size())
    return ctx->group_pe[size_t(group)];
  return ctx->pe;
}

int32_t pto_rt_n_pes(pto_ctx *ctx, int32_t group) {
  if (group >= 0 && size_t(group) < ctx->groups.size())
    return ctx->groups[size_t(group)]->n_pes;
  return ctx->world->n_pes;
}

void *pto_rt_alloc(pto_ctx *ctx, int64_t bytes, int32_t site) {
  void *p = nullptr;
  const int32_t st = abi_boundary(ctx, [&]() -> int32_t {
    try {
      // Generated code asks for INT64_MAX bytes when a size overflows; rounding it would too.
      if (bytes > INT64_MAX - 63)
        throw std::bad_alloc();
      const size_t rounded = size_t((bytes < 1 ? 1 : bytes) + 63) / 64 * 64;
      ctx->scratch.reserve(ctx->scratch.size() + 1);
      // The smallest kept block that fits and wastes at most half of itself, else a new one.
      auto &kept = ctx->scratch_kept;
      auto best = kept.end();
      for (auto it = kept.begin(); it != kept.end(); ++it)
        if (it->bytes >= rounded && it->bytes / 2 <= rounded &&
            (best == kept.end() || it->bytes < best->bytes))
          best = it;
      size_t size = rounded;
      if (best != kept.end()) {
        p = best->p;
        size = best->bytes;
        kept.erase(best);
      } else {
        p = ::operator new(rounded, std::align_val_t(64));
      }
      ctx->scratch.push_back({p, size}); // cannot throw: reserved above
      return PTO_OK;
    } catch (const std::bad_alloc &) {
      return fail<pto::RuntimeError>(ctx, site, "alloc",
                                     "cannot allocate " + std::to_string(bytes) +
                                         " bytes of scratch memory for a local tensor");
    }
  });
  return st == PTO_OK ? p : nullptr;
}

int32_t pto_rt_fail_msg(pto_ctx *ctx, int32_t error_class, int32_t site, const char *detail) {
  return abi_boundary(ctx, [&]() -> int32_t {
    switch (error_class) {
    case PTO_ERROR_RUNTIME:
      return fail<pto::RuntimeError>(ctx, site, "", detail);
    case PTO_ERROR_SHAPE:
      return fail<pto::ShapeError>(ctx, site, "", detail);
    case PTO_ERROR_ARGUMENT:
      return fail<pto::ArgumentError>(ctx, site, "", detail);
    case PTO_ERROR_DISTRIBUTED:
      return fail<pto::DistributedError>(ctx, site, "", detail);
    case PTO_ERROR_DISTRIBUTED_AGREED: {
      std::string where, op;
      pto::runtime::detail::site_location(ctx, site, "", where, op);
      return pto::runtime::detail::record_error(
          ctx, std::make_exception_ptr(pto::DistributedError(where, op, detail)),
          /*released=*/false, /*abort=*/false);
    }
    default:
      return fail<pto::InternalError>(ctx, site, "", detail);
    }
  });
}

int32_t pto_rt_fail(pto_ctx *ctx, int32_t kind, int32_t site, int64_t a, int64_t b) {
  return abi_boundary(ctx, [&]() -> int32_t {
    const std::string range = " out of range [0, " + std::to_string(b) + ")";
    // No default: a new pto_fail_kind without its message is a -Wswitch warning here.
    switch (static_cast<pto_fail_kind>(kind)) {
    case PTO_FAIL_DIV_ZERO:
      return fail<pto::RuntimeError>(ctx, site, "", "integer division by zero");
    case PTO_FAIL_INDEX:
      return fail<pto::RuntimeError>(ctx, site, "", "index " + std::to_string(a) + range);
    case PTO_FAIL_PE:
      return fail<pto::DistributedError>(ctx, site, "", "PE " + std::to_string(a) + range);
    case PTO_FAIL_OFFSET:
      return fail<pto::DistributedError>(ctx, site, "",
                                         "offset " + std::to_string(a) + " out of bounds [0, " +
                                             std::to_string(b) + ")");
    case PTO_FAIL_SLOT_ALIGN:
      return fail<pto::DistributedError>(
          ctx, site, "",
          "signal/wait window offset " + std::to_string(a) + " (within its view) is not a " +
              "multiple of the vec tile size " + std::to_string(b) +
              "; windows that are not tile-aligned would share signal slots");
    case PTO_FAIL_VIEW_BOUNDS:
      return fail<pto::ShapeError>(ctx, site, "",
                                   "view window out of bounds at run time: index " +
                                       std::to_string(a) + " is outside dim [0, " +
                                       std::to_string(b) + ") of the viewed tensor");
    }
    return fail<pto::InternalError>(ctx, site, "",
                                    "pto_rt_fail: unknown error kind " + std::to_string(kind));
  });
}

} // extern "C"
