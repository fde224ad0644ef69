#!/usr/bin/env bash
# bench.sh - Builds the Google Benchmark suites in build-bench/ (Release, PTO_BUILD_BENCH=ON),
# runs each with 5 repetitions and prints one table of medians: case, ours, the peers, their
# ratios, our bandwidth and its fraction of the measured copy bandwidth.
#
#   scripts/bench.sh                         # all suites: softmax elementwise allreduce
#   scripts/bench.sh softmax --benchmark_filter=fp32   # some suites; --flags go to each suite
#   scripts/bench.sh --table                 # only print the table of the last run
#
# Raw results (CSV, medians and spreads) land in build-bench/bench-results/SUITE.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
suites=()
flags=()
table_only=0
for a in "$@"; do
  case "$a" in
  --table) table_only=1 ;;
  --*) flags+=("$a") ;;
  *) suites+=("$a") ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(softmax elementwise allreduce)

out=build-bench/bench-results
if [ $table_only -eq 0 ]; then
scripts/bootstrap.sh --bench
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPTO_BUILD_BENCH=ON -DPTO_BUILD_TESTS=OFF \
  -DPTO_BUILD_SAMPLES=OFF >/dev/null
targets=()
for s in "${suites[@]}"; do targets+=("${s}_bench"); done
cmake --build build-bench -j "$(nproc)" --target "${targets[@]}"

mkdir -p "$out"
for s in "${suites[@]}"; do
  echo "== ${s}_bench"
  build-bench/bench/"${s}"_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$s.csv" --benchmark_out_format=csv ${flags[@]+"${flags[@]}"}
done
fi

# The table. Rows are CASE/ours paired with CASE/peer and CASE/peer_fastmath (median of 5).
# ratio = peer time / our time: above 1 we are faster. "% copy" is our bytes/s over the copy
# peer's (the STREAM-style limit), shown when the elementwise suite ran. "cv" is the larger
# coefficient of variation (stddev / mean over the 5 repetitions) of ours and the peer.
echo
for s in "${suites[@]}"; do [ -f "$out/$s.csv" ] && cat "$out/$s.csv"; done | awk -F, '
  /^"/ {
    name = $1; gsub(/"/, "", name)
    if (name ~ /_(mean|stddev)$/) { # cv = stddev / mean (the CSV cv column is scaled oddly)
      agg = name; sub(/.*_/, "", agg); sub(/_(mean|stddev)$/, "", name); sub(/\/real_time$/, "", name)
      if (agg == "mean") mean[name] = $3; else sd[name] = $3
      next
    }
    if (name !~ /_median$/) next
    sub(/_median$/, "", name)
    sub(/\/real_time$/, "", name)
    unit = $5; t = $3
    scale = (unit == "ns") ? 1e-3 : (unit == "us") ? 1 : (unit == "ms") ? 1e3 : 1e6
    n = split(name, part, "/")
    who = part[n]
    c = substr(name, 1, length(name) - length(who) - 1)
    if (!(c in seen)) { seen[c] = 1; order[++ncases] = c }
    err[c, who] = ($9 == "true")
    us[c, who] = t * scale
    bps[c, who] = $6
    if (c ~ /^copy\//) copy_bps = (who == "peer") ? $6 : copy_bps
  }
  END {
    printf "%-34s %11s %11s %7s %14s %7s %9s %7s %5s\n", "case", "ours (us)", "peer (us)", "ratio",
           "fastmath (us)", "ratio", "ours GB/s", "% copy", "cv"
    for (i = 1; i <= ncases; i++) {
      c = order[i]
      o = ((c, "ours") in us) ? sprintf("%.1f", us[c, "ours"]) : "-"
      p = ((c, "peer") in us) ? sprintf("%.1f", us[c, "peer"]) : "-"
      f = ((c, "peer_fastmath") in us) ? sprintf("%.1f", us[c, "peer_fastmath"]) : "-"
      r = (o != "-" && p != "-") ? sprintf("%.2f", us[c, "peer"] / us[c, "ours"]) : "-"
      rf = (o != "-" && f != "-") ? sprintf("%.2f", us[c, "peer_fastmath"] / us[c, "ours"]) : "-"
      gb = (o != "-" && bps[c, "ours"] != "") ? sprintf("%.2f", bps[c, "ours"] / 1e9) : "-"
      pc = (gb != "-" && copy_bps > 0) ? sprintf("%.0f%%", 100 * bps[c, "ours"] / copy_bps) : "-"
      v = 0
      if (mean[c "/ours"] > 0) v = sd[c "/ours"] / mean[c "/ours"]
      if (mean[c "/peer"] > 0 && sd[c "/peer"] / mean[c "/peer"] > v) v = sd[c "/peer"] / mean[c "/peer"]
      if (err[c, "ours"] || err[c, "peer"]) o = o " ERR"
      printf "%-34s %11s %11s %7s %14s %7s %9s %7s %4.0f%%\n", c, o, p, r, f, rf, gb, pc, 100 * v
    }
  }'
