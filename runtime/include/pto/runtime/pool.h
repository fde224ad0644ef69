// pool.h - The worker pool inside a PE: generated code runs the tile loop of a fused group (and
// the row panels of a matmul) over the cores a World leaves unused (one PE, a plain kernel call, is
// the common case). The loop body is outlined into a function of a range (the pattern of OpenMP's
// outlined regions and Halide's halide_do_par_for) and handed to pto_rt_parallel_for, which splits
// the range over a persistent pool shared by every PE of the process.
//
// Threads: at most `pool_threads()` threads of this process run kernel code at once (the PE
// threads inside a kernel call, each holding a seat (`PoolSeat`), plus the workers a
// pto_rt_parallel_for borrows), so N PEs share the pool without oversubscribing it; a
// parallel_for that finds no free seat runs its range on the calling PE alone. Workers run only
// outlined bodies that make no runtime call (no shmem wait, no barrier), so a waiting PE never
// holds a worker, and a worker never waits for another PE. Results do not depend on the split:
// the bodies handed out are row loops whose rows are independent (a matmul's are split over
// whole register-block panels, never over K), so each row is computed by one thread with the
// same instructions, whatever the thread count.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
#include <source_location>

extern "C" {
#endif

/// An outlined loop body: runs iterations [begin, end) with `env` (the body's captured values);
/// `worker` is in [0, pto_rt_workers()) and distinct among the bodies of one parallel_for that
/// run at the same time (an index into per-worker scratch).
typedef void (*pto_par_body)(void *env, int64_t begin, int64_t end, int32_t worker);

/// The number of worker indices a pto_rt_parallel_for may hand out (pool_threads(), >= 1), fixed
/// for the process once the pool is set up (the first kernel call). Cannot fail.
int32_t pto_rt_workers(void);

/// Runs body(env, b, e, w) over a partition of [begin, end) into contiguous chunks of at least
/// `grain` iterations (8 per thread at most), taken in turn by the caller and the free pool
/// workers (at most max_threads threads; w < max_threads, the copies of per-worker scratch the
/// body was given, and no two chunks run with the same w at once); returns when every chunk is
/// done. Tasks no worker has started when the caller runs out of chunks are withdrawn, so a
/// worker the OS delays costs the caller at most the chunk it holds. With no free worker, one
/// thread, or a range of fewer than 2 * `grain` iterations it is body(env, begin, end, 0).
/// `ctx` is the calling PE's (unused for now: a body makes no runtime call). Cannot fail.
void pto_rt_parallel_for(void *ctx, pto_par_body body, void *env, int64_t begin, int64_t end,
                         int64_t grain, int32_t max_threads);

#ifdef __cplusplus
}

namespace pto::runtime {

/// Sets up the pool on first use: its size is PTO_NUM_THREADS (1 to 1024; 1 runs every kernel
/// on its PE's thread alone) or else the number of CPUs this process may run on, divided by the
/// MPI ranks on this node (OMPI_COMM_WORLD_LOCAL_SIZE) under mpirun. Later calls return at once.
/// Throws ArgumentError at `loc` (the user's kernel call) for a bad PTO_NUM_THREADS.
void init_pool(std::source_location loc = std::source_location::current());

/// Threads of this process that may run kernel code at once (init_pool's choice, or
/// set_pool_threads'); initializes the pool first.
int pool_threads();

/// Replaces the pool size (tests; 1 turns parallel execution off). Only between kernel calls:
/// no PE of the process may be inside one. `n` < 1 is an ArgumentError at `loc`.
void set_pool_threads(int n, std::source_location loc = std::source_location::current());

/// How many ranges pto_rt_parallel_for has handed to pool workers since the process started
/// (tests: proof that a kernel ran on more than one thread).
uint64_t pool_ranges_lent();

/// A PE thread inside a kernel call: holds one of pool_threads() seats for its lifetime (the
/// seat is taken even when none is free: a PE always runs).
class PoolSeat {
public:
  PoolSeat();
  ~PoolSeat();
  PoolSeat(const PoolSeat &) = delete;
  PoolSeat &operator=(const PoolSeat &) = delete;
};

} // namespace pto::runtime
#endif
