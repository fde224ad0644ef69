#!/usr/bin/env bash
# check_sample_flags.sh - Every sample refuses a bad flag value clearly: reads each sample's
# options from its --help and gives every value-taking option values it must reject (below,
# above and far beyond the range --help prints, negative, zero where the range starts at 1, an
# int64 overflow, text, a fraction, hex, an empty string; an unknown choice for TEXT:{...}
# options), plus --pes beyond --help's range, an unknown --backend and a --trace FILE that
# cannot be opened for writing (a write error after the run, /dev/full, must be exit 1). Each must exit 2 within
# 20 s with a message on stderr naming the option; a signal, a hang, exit 0/1 or a silent exit
# fails. Then each option at the largest value --help allows (others at their defaults) must
# either run (--check passes) or be refused with exit 2 and a message (a run too large for this
# machine), never crash or time out. Prints one line per failure and "N passed, M failed";
# exits 1 on any failure. Usage: scripts/check_sample_flags.sh [--quick] [BUILD_DIR]
# --quick (the CTest `sample_flags`, a few seconds): the refusals only, not the runs at the
# largest values (minutes: scripts/test.sh runs them).
set -uo pipefail
quick=0
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
build=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/.."
bin=$build/samples
samples=(allreduce_softmax allreduce_add_allreduce multi_comm_groups allgather_matmul
         matmul_allreduce_rmsnorm moe_dispatch_combine collectives sharded_mlp sharded_attention)
pass=0 fail=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
ok() { pass=$((pass + 1)); }
bad() {
  fail=$((fail + 1))
  echo "FAIL: $*"
}
# refused SAMPLE FLAG VALUE [MORE ARGS]: must exit 2 with stderr naming FLAG.
refused() {
  local s=$1 flag=$2 val=$3 rc
  timeout 20 "$bin/$s" "$flag" "$val" "${@:4}" >/dev/null 2>"$err"
  rc=$?
  if [ "$rc" -ne 2 ]; then
    bad "$s $flag '$val' ${*:4} exited $rc, want 2: $(head -c 300 "$err")"
  elif ! grep -q -- "$flag" "$err"; then
    bad "$s $flag '$val': the message does not name $flag: $(head -c 300 "$err")"
  else
    ok
  fi
}
# runs_or_refused SAMPLE ARGS...: --check passes (exit 0), or exit 2 with a message.
runs_or_refused() {
  local s=$1 rc out
  out=$(timeout 60 "$bin/$s" "${@:2}" --check 2>"$err")
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^check: PASS' <<<"$out"; then
    ok
  elif [ "$rc" -eq 2 ] && [ -s "$err" ]; then
    ok
  else
    bad "$s ${*:2} exited $rc: $(tail -n 1 <<<"$out") $(head -c 300 "$err")"
  fi
}
big=99999999999999999999 # past int64
for s in "${samples[@]}"; do
  help=$("$bin/$s" --help)
  # "  --rows INT:INT in [1 - 65536]=7 ...": name, type, range.
  while read -r flag spec; do
    case "$flag" in --help | -h,--help | --seed | --trace) continue ;; esac
    case "$spec" in
    INT:INT\ in\ \[*)
      lo=$(sed -E 's/^INT:INT in \[([0-9]+) - ([0-9]+)\].*/\1/' <<<"$spec")
      hi=$(sed -E 's/^INT:INT in \[([0-9]+) - ([0-9]+)\].*/\2/' <<<"$spec")
      vals=($((lo - 1)) $((hi + 1)) $((hi * 1000)) -1 "$big" -"$big" abc 1.5 0x10 "")
      [ "$lo" -gt 0 ] && vals+=(0)
      for v in "${vals[@]}"; do
        [ "$v" = 0 ] && [ "$lo" -le 0 ] && continue
        refused "$s" "$flag" "$v"
      done
      [ "$flag" = --pes ] || [ "$quick" = 1 ] || runs_or_refused "$s" "$flag" "$hi"
      ;;
    INT*) # an integer checked against the run (collectives --root: a PE)
      for v in -1 "$big" abc 1.5 ""; do refused "$s" "$flag" "$v"; done
      ;;
    TEXT:\{*)
      for v in bogus "" ALLREDUCE; do refused "$s" "$flag" "$v"; done
      ;;
    esac
  done < <(grep -E '^ +--[a-z_]+ [A-Z]' <<<"$help" | sed -E 's/^ +//')
done
# A bad environment variable fails the run (exit 1, never a signal) with a message that starts at
# the sample's own line and names the variable.
for s in "${samples[@]}"; do
  for e in PTO_DEADLOCK_TIMEOUT_MS=abc PTO_ISA=avx1024 PTO_RUN_MODE=JIT PTO_JIT_CACHE_MB=-1; do
    out=$(env "$e" timeout 20 "$bin/$s" --pes 2 2>"$err")
    rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q "error: $s.cpp:[0-9]*: .*${e%%=*}" "$err"; then
      bad "$e $s exited $rc: $(head -c 300 "$err")"
    elif [ "${e%%=*}" = PTO_RUN_MODE ] && grep -q "mode=${e#*=}" <<<"$out"; then
      bad "$e $s: the banner shows the invalid mode before the error: $(head -c 300 <<<"$out")"
    else
      ok
    fi
  done
done
# --trace (README): a FILE that cannot be opened for writing is refused with exit 2 before the
# run; a write that fails after the run (a full device) is exit 1 with a message naming the file.
for s in "${samples[@]}"; do
  for v in "" /nonexistent-dir/trace.json /proc/trace.json; do refused "$s" --trace "$v" --pes 2; done
done
if [ -w /dev/full ]; then
  timeout 60 "$bin/allreduce_softmax" --pes 2 --trace /dev/full >/dev/null 2>"$err"
  rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "cannot write trace file '/dev/full'" "$err"; then
    bad "allreduce_softmax --trace /dev/full exited $rc, want 1: $(head -c 300 "$err")"
  else
    ok
  fi
fi
# collectives: a flag the chosen --op does not read is refused, naming the flag.
refused collectives --root 1 --op allreduce --pes 2
refused collectives --algorithm two_shot --op allgather --pes 2
refused collectives --reduction max --op broadcast --pes 2
# collectives --root outside [0, pes).
refused collectives --root 8 --op broadcast --pes 8
refused collectives --root 2 --op broadcast --pes 2
# The pto::parallel samples' --mesh AxB: not AxB, a zero axis, more PEs than --pes allows, or a
# mesh that does not match --pes.
for s in sharded_mlp sharded_attention; do
  for v in 2x abc 2x4x1 0x4 4x0 -2x4 100x100 99999999999999999999x1 ""; do refused "$s" --mesh "$v"; done
  refused "$s" --mesh 3x3 --pes 8
done
# runs SAMPLE ARGS...: --check passes (exit 0).
runs() {
  local s=$1 rc out
  out=$(timeout 60 "$bin/$s" "${@:2}" --check 2>"$err")
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^check: PASS' <<<"$out"; then
    ok
  else
    bad "$s ${*:2} exited $rc, want a PASS: $(tail -n 1 <<<"$out") $(head -c 300 "$err")"
  fi
}
# The smallest values --help allows against a split mesh axis: one head on tp = 2 (two size-1
# dims are one factor, not a broadcast: issue 8), one sequence on dp = 2, both.
runs sharded_attention --mesh 1x2 --heads 1 --seq 4 --model 8
runs sharded_attention --mesh 2x1 --batch 1 --seq 4 --model 8
runs sharded_attention --mesh 2x2 --batch 1 --heads 1 --seq 4 --model 8
echo "sample flags: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
