// trace.cpp - The World's timeline as Chrome trace JSON (Perfetto opens it): a lane per PE; on
// a world spanning processes (MPI) the process with PE 0 gathers every lane and writes the file.
#include "pto/runtime/world.h"

#include "boundary.h"
#include "world_state.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>

namespace pto::runtime {

void World::enable_trace(bool on) { state_->tracing.store(on); }

size_t World::trace_events() const {
  size_t n = 0;
  for (int pe = 0; pe < state_->n_pes; ++pe)
    n += state_->ctxs[size_t(pe)].trace.size();
  return n;
}

namespace {
// A PE's lane: "PE 3", and the events it lost to a lack of memory (record_trace), if any.
std::string lane_name(const pto_ctx &ctx, int pe) {
  if (ctx.trace_lost == 0)
    return fmt::format("PE {}", pe);
  return fmt::format("PE {} ({} events lost: out of memory)", pe, ctx.trace_lost);
}

// The events of this process's PEs (a lane each) as Chrome trace events, `shift_us` added to
// every time stamp.
nlohmann::json local_events(const detail::WorldState &w, double shift_us) {
  using nlohmann::json;
  json events = json::array();
  for (int pe : w.local_pes) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", pe},
                      {"args", {{"name", lane_name(w.ctxs[size_t(pe)], pe)}}}});
    for (const auto &e : w.ctxs[size_t(pe)].trace) {
      json args = json::object();
      if (e.bytes >= 0)
        args["bytes"] = e.bytes;
      if (e.peer >= 0)
        args["pe"] = e.peer;
      else if (std::string(e.cat) == "signal")
        args["pe"] = "all";
      if (e.slot >= 0) {
        args["slot"] = e.slot;
        args["value"] = e.value;
      }
      events.push_back({{"ph", "X"},
                        {"name", e.label.empty() ? std::string(e.name) : e.label},
                        {"cat", e.cat},
                        {"pid", 0},
                        {"tid", pe},
                        {"ts", double(e.ts_ns) / 1000.0 + shift_us},
                        {"dur", double(e.dur_ns) / 1000.0},
                        {"args", args}});
    }
  }
  return events;
}

std::string dump(const nlohmann::json &j) {
  // Kernel names are the user's strings and need not be UTF-8: invalid bytes become U+FFFD
  // (JSON has no other way to carry them) instead of a json::type_error.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The whole timeline as a Chrome trace JSON document, on the process with PE 0; "" on the others.
// With PEs in other processes (MPI), every process sends its lanes there, with its clock's
// origin: each process's times are shifted onto PE 0's process's clock (steady_clock, shared by
// the processes of one node; across nodes the lanes are aligned only as well as the clocks).
std::string trace_text(const detail::WorldState &w) {
  using nlohmann::json;
  if (int(w.local_pes.size()) == w.n_pes)
    return dump(json{{"traceEvents", local_events(w, 0)}, {"displayTimeUnit", "ns"}});
  const int64_t t0_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(w.trace_t0.time_since_epoch()).count();
  const std::vector<std::string> parts = w.transport->gather_to_first(
      dump(json{{"t0_ns", t0_ns}, {"events", local_events(w, 0)}}), 2 * w.deadlock_timeout_ms);
  if (parts.empty())
    return "";
  json events = json::array();
  int64_t first_t0 = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    json part = json::parse(parts[i]);
    const int64_t t0 = part["t0_ns"].get<int64_t>();
    if (i == 0)
      first_t0 = t0;
    const double shift_us = double(t0 - first_t0) / 1000.0;
    for (auto &e : part["events"]) {
      if (e.contains("ts"))
        e["ts"] = e["ts"].get<double>() + shift_us;
      events.push_back(std::move(e));
    }
  }
  return dump(json{{"traceEvents", events}, {"displayTimeUnit", "ns"}});
}
} // namespace

void World::write_trace(const std::string &path, std::source_location loc) const {
  constexpr const char *kOp = "World::write_trace";
  if (path.empty())
    throw ArgumentError(loc, kOp, "the trace file path is empty");
  if (running_.load())
    throw DistributedError(loc, kOp,
                           "cannot write the trace while the world is running; call it after "
                           "World::run returns");
  std::string text;
  try { // the other processes did not all call it (MPI): at the caller's line
    text = detail::host_boundary(loc, kOp, "formatting the trace",
                                 [&] { return trace_text(*state_); });
  } catch (const DistributedError &e) {
    throw DistributedError(loc, kOp, e.detail());
  }
  if (text.empty())
    return; // another process (the one with PE 0) writes the file
  errno = 0;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const int open_errno = errno;
  if (f)
    f << text << "\n";
  if (f)
    f.close();
  if (!f)
    throw RuntimeError(loc, kOp,
                       fmt::format("cannot write trace file '{}': {}", path,
                                   std::strerror(open_errno != 0 ? open_errno : EIO)));
}

} // namespace pto::runtime

extern "C" {

int64_t pto_rt_trace_now(pto_ctx *ctx) {
  if (!ctx->world->tracing.load(std::memory_order_relaxed))
    return -1;
  return ctx->world->trace_now_ns();
}

void pto_rt_trace_op(pto_ctx *ctx, int32_t site, int32_t n_ops, int64_t start_ns) {
  if (start_ns < 0 || !ctx->world->tracing.load(std::memory_order_relaxed))
    return;
  pto::runtime::detail::record_trace(ctx, [&] {
    std::string where, op;
    pto::runtime::detail::site_location(ctx, site, "op", where, op);
    pto::runtime::detail::TraceEvent e;
    e.name = "op";
    e.cat = "op";
    e.label = n_ops > 1 ? op + " (fused, " + std::to_string(n_ops) + " ops)" : op;
    e.ts_ns = start_ns;
    e.dur_ns = ctx->world->trace_now_ns() - start_ns;
    return e;
  });
}

} // extern "C"
