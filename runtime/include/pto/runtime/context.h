// context.h - The per-PE context (`pto_ctx`) as the host side of a kernel call sees it: find the
// calling PE's context, bracket a kernel call, and turn a recorded error into the typed exception.
#pragma once

#include "pto/runtime/abi.h"

#include <map>
#include <string>
#include <vector>

namespace pto::runtime {

/// The calling thread's PE context: inside World::run, the PE that thread runs; elsewhere the
/// context of a lazily created 1-PE world owned by the calling thread (so a plain kernel call
/// from main() runs on 1 PE). Never null.
pto_ctx *current_ctx();

/// Starts a kernel call on `ctx`: clears a previous status and remembers the kernel's call-site
/// table (`sites[i]` is "file.cpp:12: opname", indexed by the ABI's `site` argument; may be
/// null). `kernel_name` labels the call in a trace; `call_where` is the "file:line" of the
/// user's call. Errors recorded without an op site (kernel entry and exit barriers, scratch
/// memory) start with `call_where` and name the kernel when both are given. All three must
/// outlive the call.
void begin_call(pto_ctx *ctx, const std::vector<std::string> *sites,
                const char *kernel_name = nullptr, const char *call_where = nullptr);

/// Ends a kernel call: frees the scratch memory of pto_rt_alloc and forgets the site table. If
/// an entry point recorded an error (status PTO_ERR), rethrows that typed pto::Error (for example
/// pto::DistributedError, pto::DeadlockError, pto::RuntimeError) and resets the status.
void end_call(pto_ctx *ctx);

/// This PE's number in the world, in [0, n_pes(ctx)).
int my_pe(const pto_ctx *ctx);
/// Number of PEs in the world of `ctx`.
int n_pes(const pto_ctx *ctx);
/// The groups created in the world of `ctx` (World::create_group), as name -> number of PEs.
std::map<std::string, int> group_sizes(const pto_ctx *ctx);

} // namespace pto::runtime
