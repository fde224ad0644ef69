// context.h - The per-PE context (`pto_ctx`) as the host side of a kernel call sees it: find the
// calling PE's context, bracket a kernel call, and turn a recorded error into the typed exception.
#pragma once

#include "pto/runtime/abi.h"

#include <map>
#include <source_location>
#include <string>
#include <vector>

namespace pto::runtime {

/// The calling thread's PE context: inside World::run, the PE that thread runs; elsewhere the
/// context of a lazily created 1-PE world owned by the calling thread (so a plain kernel call
/// from main() runs on 1 PE). Never null. Errors creating that world (a bad
/// PTO_DEADLOCK_TIMEOUT_MS: ArgumentError) point at `loc`, the user's kernel call; with
/// `kernel` (the kernel being called) a bad PTO_* variable is reported first, as
/// " (tracing kernel 'name')" like the kernel's own check, so the message does not depend on
/// whether this thread made its 1-PE world already.
pto_ctx *current_ctx(std::source_location loc = std::source_location::current(),
                     const std::string *kernel = nullptr);

/// Starts a kernel call on `ctx`: clears a previous status and remembers the kernel's call-site
/// table (`sites[i]` is "file.cpp:12: opname", indexed by the ABI's `site` argument; may be
/// null). The table and `kernel_name` must outlive the call. `kernel_name` labels the call in a
/// trace; `call_loc` is the user's line that called the kernel. Errors that have no site of
/// their own (scratch memory, kernel entry and exit barriers) are reported as
/// "call_loc: kernel_name: ..." (as "<runtime>: op: ..." when `call_loc` is left empty).
/// Counts as progress for the deadlock detector, as end_call does.
void begin_call(pto_ctx *ctx, const std::vector<std::string> *sites,
                const char *kernel_name = nullptr, std::source_location call_loc = {});

/// Ends a kernel call: frees the scratch memory of pto_rt_alloc and forgets the site table. If
/// an entry point recorded an error (status PTO_ERR), rethrows that typed pto::Error (for example
/// pto::DistributedError, pto::DeadlockError, pto::RuntimeError) and resets the status.
void end_call(pto_ctx *ctx);

/// This PE's number in the world, in [0, n_pes(ctx)).
int my_pe(const pto_ctx *ctx);
/// Number of PEs in the world of `ctx`.
int n_pes(const pto_ctx *ctx);
/// An identity of the world of `ctx`: equal for the PEs of one World (in this process), distinct
/// for different Worlds alive at the same time (each thread's implicit 1-PE world is its own).
const void *world_id(const pto_ctx *ctx);
/// The groups created in the world of `ctx` (World::create_group), as name -> number of PEs.
std::map<std::string, int> group_sizes(const pto_ctx *ctx);
/// A value that changes whenever the groups of the world of `ctx` change (a group created
/// explicitly or on first use) and differs between Worlds, even one made at the address of a
/// destroyed one: equal values mean the same world with the same groups, so group_sizes() is
/// the same. Never throws.
uint64_t groups_version(const pto_ctx *ctx) noexcept;

} // namespace pto::runtime
