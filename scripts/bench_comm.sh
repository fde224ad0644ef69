#!/usr/bin/env bash
# bench_comm.sh - The communication benchmarks of issue 10 and their peers, in ONE run on this
# machine: builds build-bench/ (Release, PTO_BUILD_BENCH=ON), runs ptojit's comm_bench and
# allreduce_bench (Google Benchmark, 5 repetitions, medians), the threads reduce-scatter +
# allgather reference (bench/peers/threads_rsag.cpp) and Open MPI's peers under mpirun
# (bench/peers/mpi_peers.cpp: MPI_Put + flush and Send/Recv ping-pongs, MPI_Allreduce on 2 and 8
# processes) and ptojit's allreduce on the MPI transport against MPI_Allreduce in the same
# processes (bench/peers/ptojit_mpi.cpp, mpirun -np 2), then prints one table: case, ptojit median, each peer's median, and the ratio
# peer time / ptojit time (above 1: ptojit is faster), with the CPU model. Paste it, with this
# command, into bench/RESULTS.md.
#
#   scripts/bench_comm.sh            # build, run everything, print the table
#   scripts/bench_comm.sh --table    # only print the table of the last run
#
# Raw outputs land in build-bench/bench-results/comm/. Without MPI the MPI peers show "-".
set -euo pipefail
cd "$(dirname "$0")/.."
out=build-bench/bench-results/comm
table_only=0
[ "${1:-}" = "--table" ] && table_only=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # we may run as root
mpirun_() { mpirun --oversubscribe --bind-to none "$@"; }

if [ $table_only -eq 0 ]; then
  scripts/bootstrap.sh --bench
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPTO_BUILD_BENCH=ON -DPTO_BUILD_TESTS=OFF \
    -DPTO_BUILD_SAMPLES=OFF >/dev/null
  targets=(threads_rsag)
  for t in comm_bench allreduce_bench; do [ -f "bench/$t.cpp" ] && targets+=("$t"); done
  command -v mpirun >/dev/null && targets+=(mpi_peers ptojit_mpi)
  cmake --build build-bench -j "$(nproc)" --target "${targets[@]}"
  rm -rf "$out"
  mkdir -p "$out"
  gb=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out_format=csv)
  for t in comm_bench allreduce_bench; do
    if [ -x "build-bench/bench/$t" ]; then
      echo "== $t"
      "build-bench/bench/$t" "${gb[@]}" --benchmark_out="$out/$t.csv"
    fi
  done
  echo "== threads_rsag"
  build-bench/bench/threads_rsag 2 8 | tee "$out/peers.txt"
  if [ -x build-bench/bench/mpi_peers ]; then
    echo "== mpi_peers (mpirun -np 2, -np 8)"
    mpirun_ -np 2 build-bench/bench/mpi_peers | tee -a "$out/peers.txt"
    mpirun_ -np 8 build-bench/bench/mpi_peers --only mpi_allreduce/8MiB | tee -a "$out/peers.txt"
  fi
  if [ -x build-bench/bench/ptojit_mpi ]; then
    echo "== ptojit_mpi (mpirun -np 2: ptojit on the MPI transport and MPI_Allreduce, same run)"
    mpirun_ -np 2 build-bench/bench/ptojit_mpi | tee -a "$out/peers.txt"
  fi
fi

# ptojit's medians (us) by case name from the Google Benchmark CSVs, then the peers' PEER lines.
{
  for f in "$out"/*.csv; do [ ! -f "$f" ] || cat "$f"; done | awk -F, '/^"/ {
    name = $1; gsub(/"/, "", name)
    if (name !~ /_median$/) next
    sub(/_median$/, "", name); sub(/\/(real_time|manual_time)$/, "", name)
    unit = $5; scale = (unit == "ns") ? 1e-3 : (unit == "us") ? 1 : (unit == "ms") ? 1e3 : 1e6
    printf "OURS %s %.4f\n", name, $3 * scale
  }'
  # ptojit on the MPI transport reports as a peer binary does: its lines are ptojit's side.
  [ -f "$out/peers.txt" ] && awk '/^PEER / { sub(/median_us=/, "", $3)
    print ($2 ~ /^ptojit_mpi_/ ? "OURS" : "PEER"), $2, $3 }' "$out/peers.txt"
} | awk -v cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)" '
  # Each row: label @ ptojit case (a regex over the benchmark names) @ peers (exact names).
  BEGIN {
    rows[++n] = "put+signal 8 B, one way, 2 PEs@^pingpong/put_signal_8B@mpi_put_pingpong/8B/np:2 mpi_sendrecv_pingpong/8B/np:2"
    rows[++n] = "allreduce fp32 8 MiB, 2 PEs@^allreduce.*8MiB.*pes:2($|/)@mpi_allreduce/8MiB/np:2 threads_rsag/8MiB/threads:2"
    rows[++n] = "allreduce fp32 8 MiB, 8 PEs@^allreduce.*8MiB.*pes:8($|/)@mpi_allreduce/8MiB/np:8 threads_rsag/8MiB/threads:8"
    rows[++n] = "allreduce 8 KiB, 2 PEs, per call of 200@^allreduce_loop/8KiB/pes:2@mpi_allreduce_loop/8KiB/np:2"
    rows[++n] = "allreduce fp32 8 MiB, 2 ranks, MPI transport@^ptojit_mpi_allreduce/8MiB/np:2@mpi_allreduce_same_run/8MiB/np:2 mpi_allreduce/8MiB/np:2"
    rows[++n] = "allreduce 8 KiB, 2 ranks, MPI transport, per call of 200@^ptojit_mpi_allreduce_loop/8KiB/np:2@mpi_allreduce_loop_same_run/8KiB/np:2"
    rows[++n] = "World::run trivial, 1 PE@^world_run/trivial/pes:1@"
    rows[++n] = "World::run trivial, 2 PEs@^world_run/trivial/pes:2@"
  }
  $1 == "OURS" { ours[$2] = $3; order[++no] = $2 }
  $1 == "PEER" { peer[$2] = $3 }
  END {
    printf "CPU: %s\n\n", cpu
    printf "| case | ptojit (us) | peer | peer (us) | ratio |\n|---|---|---|---|---|\n"
    for (i = 1; i <= n; i++) {
      split(rows[i], r, "@")
      found = 0
      for (k = 1; k <= no; k++) {
        name = order[k]
        if (name !~ r[2]) continue
        found = 1
        np = split(r[3], ps, " ")
        if (np == 0) printf "| %s (`%s`) | %.2f | - | - | - |\n", r[1], name, ours[name]
        for (j = 1; j <= np; j++) {
          p = ps[j]
          pv = (p in peer) ? sprintf("%.2f", peer[p]) : "-"
          ratio = (p in peer && ours[name] > 0) ? sprintf("%.2f", peer[p] / ours[name]) : "-"
          printf "| %s (`%s`) | %.2f | %s | %s | %s |\n", r[1], name, ours[name], p, pv, ratio
        }
      }
      if (!found) {
        np = split(r[3], ps, " ")
        for (j = 1; j <= np; j++) {
          p = ps[j]; pv = (p in peer) ? sprintf("%.2f", peer[p]) : "-"
          printf "| %s | - | %s | %s | - |\n", r[1], p, pv
        }
        if (np == 0) printf "| %s | - | - | - | - |\n", r[1]
      }
    }
  }'
