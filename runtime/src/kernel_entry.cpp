// kernel_entry.cpp - The collective kernel entry and exit (abi.h): the members of each group
// agree on the layout of its shmem tensors (an allgather through the transport), map its heap
// (zero when the kernel starts), and meet at barriers; failures become typed errors here.
#include "pto/env.h"
#include "pto/runtime/abi.h"

#include "boundary.h"
#include "world_state.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <new>

using namespace pto::runtime;
using pto::runtime::detail::abi_boundary;
using pto::runtime::detail::CorePolicy;
using pto::runtime::detail::fail;
using pto::runtime::transport::WaitResult;

namespace pto::runtime::detail {

// Turns the outcome of a collective of group `g` into the recorded error (anything but Done),
// returning PTO_OK or PTO_ERR. `what` names the collective in messages ("kernel entry
// barrier", "kernel exit barrier").
int32_t collective_result(pto_ctx *ctx, const detail::GroupState &g, WaitResult r,
                          const CorePolicy &policy, const char *op, const char *what) {
  auto world_pes = [&](const std::vector<int> &local) {
    std::vector<int> v;
    for (int p : local)
      v.push_back(g.world_pe[size_t(p)]);
    return v;
  };
  switch (r) {
  case WaitResult::Done:
    return PTO_OK;
  case WaitResult::Aborted:
    return detail::fail_released(ctx, -1, op);
  case WaitResult::PeerGone:
    return fail<pto::DistributedError>(
        ctx, -1, op,
        fmt::format("PE {} returned from its function without reaching the {} of group '{}'; "
                    "every PE of a group must launch the same kernels in the same order",
                    g.world_pe[size_t(policy.culprit())], what, g.name));
  case WaitResult::Stalled:
    return fail<pto::DeadlockError>(
        ctx, -1, op,
        fmt::format("PE {} timed out after {} ms (twice the deadlock timeout) without progress "
                    "on any PE at the {} of group '{}': {} of {} PEs arrived, missing PEs [{}]; "
                    "raise PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately computes that long "
                    "without communicating",
                    ctx->pe, policy.timeout_ms(), what, g.name,
                    g.n_pes - int(policy.missing().size()), g.n_pes,
                    fmt::join(world_pes(policy.missing()), ", ")));
  }
  return PTO_ERR;
}

} // namespace pto::runtime::detail

namespace {
constexpr const char *kEnterOp = "kernel_enter";
using pto::runtime::detail::collective_result;

// A barrier of group `g` (this PE is member `me`); records the error on failure.
int32_t group_barrier(pto_ctx *ctx, detail::GroupState &g, int me, const char *op,
                      const char *what) {
  detail::WorldState &w = *ctx->world;
  w.progress.bump(); // this arrival
  CorePolicy policy(w, /*collective=*/true, &g);
  return collective_result(ctx, g, g.t->barrier(me, policy), policy, op, what);
}

std::vector<std::string> split_lines(const char *text) {
  std::vector<std::string> out;
  std::string line;
  for (const char *c = text; *c; ++c)
    if (*c == '\n') {
      out.push_back(std::move(line));
      line.clear();
    } else {
      line += *c;
    }
  if (!line.empty())
    out.push_back(std::move(line));
  return out;
}

// How ir::Group::agreements lines start (a collective's concrete valid shape).
constexpr std::string_view kValidShapeLine = "valid shape [";

// What differs between two layout descriptions (abi.h, pto_rt_kernel_enter's group_layout: one
// shmem tensor per line, "what\twhere"): the first shmem tensor that differs, or the counts.
std::string layout_difference(const char *a, const char *b, int pe_a, int pe_b) {
  const auto la = split_lines(a), lb = split_lines(b);
  auto what = [](const std::string &l) { return l.substr(0, l.find('\t')); };
  auto where = [](const std::string &l) {
    auto tab = l.find('\t');
    return tab == std::string::npos ? std::string("?") : l.substr(tab + 1);
  };
  // The op of a collective's line "valid shape [...] to OP".
  auto op = [](const std::string &w) {
    const auto to = w.rfind(" to ");
    return to == std::string::npos ? w : w.substr(to + 4);
  };
  for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i) {
    const std::string wa = what(la[i]), wb = what(lb[i]);
    if (wa == wb)
      continue;
    const bool ca = wa.starts_with(kValidShapeLine), cb = wb.starts_with(kValidShapeLine);
    if (ca && cb && op(wa) != op(wb))
      return fmt::format("PE {} calls {} at {} where PE {} calls {} at {}; every PE of a group "
                         "must call the same collectives in the same order",
                         pe_a, op(wa), where(la[i]), pe_b, op(wb), where(lb[i]));
    if (ca && cb)
      return fmt::format(
          "PE {} passes {} at {} but PE {} passes {} at {}; every PE of a group must "
          "pass the same valid shape to a collective",
          pe_a, wa, where(la[i]), pe_b, wb, where(lb[i]));
    if (ca != cb) // one PE calls a collective where the other creates a shmem tensor
      return fmt::format("PE {} {} at {} where PE {} {} at {}; every PE of a group must create "
                         "the same shmem tensors and call the same collectives in the same order",
                         pe_a, ca ? "calls " + op(wa) : "creates shmem tensor " + wa, where(la[i]),
                         pe_b, cb ? "calls " + op(wb) : "creates shmem tensor " + wb, where(lb[i]));
    return fmt::format("shmem tensor {} is {} on PE {} (created at {}) but {} on PE {} (created "
                       "at {})",
                       i, wa, pe_a, where(la[i]), wb, pe_b, where(lb[i]));
  }
  if (la.size() == lb.size())
    return ""; // the difference is not in the description
  return fmt::format("PE {} creates {} shmem tensors in the group, PE {} creates {}", pe_a,
                     la.size(), pe_b, lb.size());
}

// What each member proposes at kernel entry (allgathered): the layout hash and heap size of the
// group's shmem tensors, and the lengths of the texts exchanged when the proposals differ.
struct Proposal {
  uint64_t hash = 0;
  int64_t bytes = 0;
  uint64_t kernel_hash = 0; ///< of the kernel's name: every member must run the same kernel
  int64_t layout_len = -1;  ///< -1: no layout description
  int64_t kernel_len = -1;  ///< -1: no kernel name
};

// The message for proposals that differ between members 0 and p (texts: each member's layout and
// kernel name, as exchanged).
std::string layout_mismatch(const detail::GroupState &g, const std::vector<Proposal> &all, int p,
                            const std::vector<std::string> &layout,
                            const std::vector<std::string> &kernel) {
  const int pe0 = g.world_pe[0], pe = g.world_pe[size_t(p)];
  if (all[0].hash == all[size_t(p)].hash && all[0].bytes == all[size_t(p)].bytes)
    return fmt::format("PEs {} and {} of group '{}' launch different kernels at once: PE {} runs "
                       "kernel '{}', PE {} kernel '{}'; every PE of a group must launch the same "
                       "kernels in the same order",
                       pe0, pe, g.name, pe0, kernel[0], pe, kernel[size_t(p)]);
  std::string what = all[0].layout_len >= 0 && all[size_t(p)].layout_len >= 0
                         ? layout_difference(layout[0].c_str(), layout[size_t(p)].c_str(), pe0, pe)
                         : "";
  if (what.empty())
    what = fmt::format("{} and {} heap bytes, layouts {:#018x} and {:#018x}", all[0].bytes,
                       all[size_t(p)].bytes, all[0].hash, all[size_t(p)].hash);
  if (all[0].kernel_len >= 0 && all[size_t(p)].kernel_len >= 0 && kernel[0] != kernel[size_t(p)])
    what += fmt::format("; PE {} runs kernel '{}', PE {} kernel '{}'", pe0, kernel[0], pe,
                        kernel[size_t(p)]);
  if (what.find("to a collective") != std::string::npos ||
      what.find("the same collectives") != std::string::npos)
    return fmt::format("PEs {} and {} of group '{}' disagree: {}", pe0, pe, g.name, what);
  return fmt::format(
      "PEs {} and {} of group '{}' declared different shmem tensors ({}); every PE of a "
      "group must create the same shmem tensors (same shapes and dtypes) in the same order",
      pe0, pe, g.name, what);
}

// Kernel entry of one group: agree on the layout, map the heap (zero), meet. Records the error.
int32_t enter_group(pto_ctx *ctx, detail::GroupState &g, int me, uint64_t hash, int64_t bytes,
                    int64_t zero_bytes, const char *layout) {
  detail::WorldState &w = *ctx->world;
  constexpr const char *kWhat = "kernel entry barrier";
  uint64_t kernel_hash = 1469598103934665603ull; // FNV-1a
  for (const char *c = ctx->kernel_name ? ctx->kernel_name : ""; *c; ++c)
    kernel_hash = (kernel_hash ^ uint64_t(static_cast<unsigned char>(*c))) * 1099511628211ull;
  Proposal mine{hash, bytes, kernel_hash, layout ? int64_t(std::strlen(layout)) : -1,
                ctx->kernel_name ? int64_t(std::strlen(ctx->kernel_name)) : -1};
  std::vector<Proposal> all(static_cast<size_t>(g.n_pes));
  w.progress.bump(); // this arrival
  {
    CorePolicy policy(w, /*collective=*/true, &g);
    const WaitResult r = g.t->allgather(me, &mine, sizeof mine, all.data(), policy);
    if (r != WaitResult::Done)
      return collective_result(ctx, g, r, policy, kEnterOp, kWhat);
  }
  int differs = 0;
  for (int p = 1; p < g.n_pes && !differs; ++p)
    if (all[size_t(p)].hash != all[0].hash || all[size_t(p)].bytes != all[0].bytes ||
        all[size_t(p)].kernel_hash != all[0].kernel_hash)
      differs = p;
  if (differs) {
    // Every member sees the same proposals, so all exchange their texts (padded to the longest)
    // and report the same difference.
    int64_t width = 2;
    for (const auto &a : all)
      width = std::max(width,
                       std::max<int64_t>(a.layout_len, 0) + std::max<int64_t>(a.kernel_len, 0) + 2);
    std::vector<char> text(size_t(width), '\0'), texts(size_t(width * g.n_pes), '\0');
    if (layout)
      std::memcpy(text.data(), layout, size_t(mine.layout_len));
    if (ctx->kernel_name)
      std::memcpy(text.data() + std::max<int64_t>(mine.layout_len, 0) + 1, ctx->kernel_name,
                  size_t(mine.kernel_len));
    CorePolicy policy(w, /*collective=*/true, &g);
    const WaitResult r = g.t->allgather(me, text.data(), size_t(width), texts.data(), policy);
    if (r != WaitResult::Done)
      return collective_result(ctx, g, r, policy, kEnterOp, kWhat);
    std::vector<std::string> layouts, kernels;
    for (int p = 0; p < g.n_pes; ++p) {
      const char *t = texts.data() + p * width;
      layouts.emplace_back(t);
      kernels.emplace_back(t + std::max<int64_t>(all[size_t(p)].layout_len, 0) + 1);
    }
    return fail<pto::DistributedError>(ctx, -1, kEnterOp,
                                       layout_mismatch(g, all, differs, layouts, kernels));
  }
  try {
    g.t->map_heap_zeroing(me, bytes, zero_bytes);
  } catch (const std::bad_alloc &) { // out of memory: a RuntimeError, as world.h says
    return fail<pto::RuntimeError>(
        ctx, -1, kEnterOp,
        fmt::format("cannot allocate a symmetric heap of {} bytes on each of {} PEs for group "
                    "'{}'",
                    bytes, g.n_pes, g.name));
  }
  // No member touches a heap of the group before every member has mapped (zeroed) its own.
  return group_barrier(ctx, g, me, kEnterOp, kWhat);
}

// The kernel's groups in name order: every PE takes group barriers in one global order, so PEs
// that share several groups cannot wait on each other in a cycle.
std::vector<int32_t> barrier_order(const pto_ctx *ctx) {
  std::vector<int32_t> order;
  for (size_t g = 0; g < ctx->groups.size(); ++g) {
    bool dup = false;
    for (size_t h = 0; h < g; ++h)
      dup = dup || ctx->groups[h] == ctx->groups[g];
    if (!dup)
      order.push_back(int32_t(g));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return ctx->groups[size_t(a)]->name < ctx->groups[size_t(b)]->name;
  });
  return order;
}
} // namespace

extern "C" {

int32_t pto_rt_kernel_enter(pto_ctx *ctx, const uint64_t *group_hash, int32_t n_groups,
                            const int64_t *heap_bytes, const int32_t *group_n_pes,
                            const char *const *group_names, const char *const *group_where,
                            const char *const *group_layout) {
  return abi_boundary(ctx, [&]() -> int32_t {
    detail::WorldState &w = *ctx->world;
    detail::TraceScope trace(ctx, "kernel entry barrier", "barrier");
    std::vector<int64_t> zero_bytes = std::move(ctx->zero_bytes); // pto_rt_heap_zeroing's
    ctx->zero_bytes.clear();
    if (zero_bytes.size() != size_t(std::max(n_groups, 0)))
      zero_bytes.assign(size_t(std::max(n_groups, 0)), INT64_MAX);
    if (n_groups < 0 || (n_groups > 0 && (!heap_bytes || !group_n_pes || !group_hash)))
      return fail<pto::InternalError>(ctx, -1, kEnterOp,
                                      fmt::format("bad group table: n_groups {}", n_groups));
    // Resolve the groups (local checks first: a PE with a bad table fails at once and releases
    // the others).
    ctx->groups.clear();
    ctx->group_pe.clear();
    for (int32_t g = 0; g < n_groups; ++g) {
      std::string name =
          group_names && group_names[g] ? std::string(group_names[g]) : fmt::format("group {}", g);
      if (heap_bytes[g] < 0)
        return fail<pto::InternalError>(
            ctx, -1, kEnterOp,
            fmt::format("negative heap size {} for group '{}'", heap_bytes[g], name));
      // Errors point at the kernel line that first used the group.
      const std::string where =
          group_where && group_where[g] ? std::string(group_where[g]) : std::string("<runtime>");
      auto fail_here = [&](const std::string &detail) {
        return detail::record_error(
            ctx,
            std::make_exception_ptr(pto::DistributedError(where, "create_shmem_tensor", detail)),
            /*released=*/false);
      };
      detail::GroupState *gs = nullptr;
      try {
        gs = &w.group(name, group_n_pes[g]);
      } catch (const pto::DistributedError &e) {
        return fail_here(e.detail());
      }
      auto it = std::find(gs->world_pe.begin(), gs->world_pe.end(), ctx->pe);
      if (it == gs->world_pe.end())
        return fail_here(fmt::format("PE {} is not a member of group '{}' (PEs [{}]); each PE may "
                                     "only use groups it belongs to",
                                     ctx->pe, name, fmt::join(gs->world_pe, ", ")));
      ctx->groups.push_back(gs);
      ctx->group_pe.push_back(int(it - gs->world_pe.begin()));
    }
    for (int32_t g : barrier_order(ctx))
      if (enter_group(ctx, *ctx->groups[size_t(g)], ctx->group_pe[size_t(g)], group_hash[g],
                      heap_bytes[g], zero_bytes[size_t(g)],
                      group_layout ? group_layout[g] : nullptr) != PTO_OK)
        return PTO_ERR;
    return PTO_OK;
  });
}

int32_t pto_rt_heap_table(pto_ctx *ctx, int32_t group, int32_t n_ranges, const int64_t *ranges,
                          void **bases) {
  return abi_boundary(ctx, [&]() -> int32_t {
    if (group < 0 || size_t(group) >= ctx->groups.size() || !bases)
      return fail<pto::InternalError>(
          ctx, -1, "kernel_enter",
          fmt::format("heap table of undeclared group {} ({} groups)", group, ctx->groups.size()));
    detail::GroupState &gs = *ctx->groups[size_t(group)];
    transport::Group &g = *gs.t;
    // Every peer's heap directly addressable (shared memory; MPI shared-memory windows), and not
    // while tracing: the runtime calls record the timeline's put and get events. PTO_SHMEM_DIRECT
    // was checked when the World was made (env.h); a value set since is an error here.
    bool direct = pto::env::read_choice(pto::env::var("PTO_SHMEM_DIRECT"), {}) != "0" &&
                  !ctx->world->tracing.load(std::memory_order_relaxed);
    for (int pe = 0; pe < gs.n_pes && direct; ++pe)
      direct = g.direct_base(pe) != nullptr;
    for (int pe = 0; pe < gs.n_pes; ++pe)
      bases[pe] = direct ? g.direct_base(pe) : nullptr;
    // Signals and waits in generated code: every PE's sleep flag, this thread's progress shard
    // and this PE's own heap base, or all null.
    bool signals = direct;
    for (int pe = 0; pe < gs.n_pes && signals; ++pe)
      signals = g.sleep_flag(pe) != nullptr;
    for (int pe = 0; pe < gs.n_pes; ++pe)
      bases[gs.n_pes + pe] =
          signals ? const_cast<std::atomic<int32_t> *>(g.sleep_flag(pe)) : nullptr;
    bases[2 * gs.n_pes] = signals ? ctx->world->progress.mine() : nullptr;
    bases[2 * gs.n_pes + 1] = signals ? g.direct_base(ctx->group_pe[size_t(group)]) : nullptr;
    if (direct)
      for (int32_t r = 0; r < n_ranges; ++r)
        for (int pe = 0; pe < gs.n_pes; ++pe)
          g.note_written(pe, ranges[2 * r], ranges[2 * r + 1]);
    return PTO_OK;
  });
}

int32_t pto_rt_heap_zeroing(pto_ctx *ctx, int32_t n_groups, const int64_t *zero_bytes) {
  return abi_boundary(ctx, [&]() -> int32_t {
    ctx->zero_bytes.clear();
    if (n_groups > 0 && zero_bytes)
      ctx->zero_bytes.assign(zero_bytes, zero_bytes + n_groups);
    return PTO_OK;
  });
}

int32_t pto_rt_kernel_exit(pto_ctx *ctx) {
  return abi_boundary(ctx, [&]() -> int32_t {
    detail::TraceScope trace(ctx, "kernel exit barrier", "barrier");
    for (int32_t g : barrier_order(ctx)) {
      detail::GroupState &gs = *ctx->groups[size_t(g)];
      if (group_barrier(ctx, gs, ctx->group_pe[size_t(g)], "kernel_exit", "kernel exit barrier") !=
          PTO_OK)
        return PTO_ERR;
    }
    return PTO_OK;
  });
}

} // extern "C"
