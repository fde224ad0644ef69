#!/usr/bin/env bash
# pto_dump_test.sh PTO_DUMP SAMPLE - pto-dump's test (CTest "pto_dump", label quick): runs it on
# a sample (allreduce_softmax, one kernel) and checks what it prints and its exit status against
# what the dump files must be (README.md, "Environment"). Prints the failed check and exits 1.
set -euo pipefail
dump=$1 sample=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "pto_dump_test: $*"
  exit 1
}

# The default stages, in pipeline order, each under its header, after the program's own output.
"$dump" -- "$sample" --pes 2 --check >"$tmp/out"
grep -q 'check: PASS' "$tmp/out" || fail "the program's output is missing"
headers=$(grep '^==== ' "$tmp/out" | awk '{print $2, $4}' | tr '\n' ';')
[ "$headers" = "allreduce_softmax ir;allreduce_softmax tiles;allreduce_softmax plan;" ] ||
  fail "default stages: headers '$headers'"
[ "$(wc -l <"$tmp/out")" -gt 20 ] || fail "the dumps' text is missing"

# --stages picks stages (any order in, pipeline order out); llvm is the LLVM module.
"$dump" --stages llvm,ir -- "$sample" --pes 2 >"$tmp/out"
headers=$(grep '^==== ' "$tmp/out" | awk '{print $4}' | tr '\n' ';')
[ "$headers" = "ir;llvm;" ] || fail "--stages llvm,ir: headers '$headers'"
grep -q '^define ' "$tmp/out" || fail "--stages llvm: no LLVM function"

# The interpreter writes no llvm or asm stage; --list prints the headers alone.
"$dump" --stages all --list -- "$sample" --pes 2 --interpret >"$tmp/out"
headers=$(grep '^==== ' "$tmp/out" | awk '{print $4}' | tr '\n' ';')
[ "$headers" = "ir;tiles;plan;" ] || fail "--interpret --stages all: headers '$headers'"
"$dump" --stages llvm,ir -- "$sample" --pes 2 --interpret 2>"$tmp/err" >/dev/null
grep -q 'no llvm or asm stage was written: the kernels ran in the interpreter' "$tmp/err" ||
  fail "--interpret --stages llvm: no note that llvm does not exist there: $(cat "$tmp/err")"

# --kernel filters; no match is exit 1. --keep leaves the files.
rc=0
"$dump" --kernel other -- "$sample" --pes 2 >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "--kernel other: exit $rc, want 1"
"$dump" --kernel allreduce_softmax --stages plan --keep "$tmp/keep" -- "$sample" --pes 2 >/dev/null
ls "$tmp/keep"/allreduce_softmax.*.plan >/dev/null || fail "--keep: no plan file kept"
# Files the run did not write are not its dumps: a stale one in DIR is not printed, and a run
# that writes none is exit 1 even so; a rewritten one is printed.
printf 'STALE\n' >"$tmp/keep/stale_kernel.0badf00d.ir"
rc=0
"$dump" --keep "$tmp/keep" -- true >"$tmp/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "--keep with only stale files: exit $rc, want 1"
! grep -q STALE "$tmp/out" || fail "--keep printed a file the run did not write"
"$dump" --keep "$tmp/keep" --stages plan -- "$sample" --pes 2 >"$tmp/out"
headers=$(grep '^==== ' "$tmp/out" | awk '{print $2, $4}' | tr '\n' ';')
[ "$headers" = "allreduce_softmax plan;" ] || fail "--keep rerun: headers '$headers'"

# A --keep DIR that cannot be created or written is exit 2 with a message, before the program
# runs (the program's output must not appear). A regular file stands in for an unwritable
# directory: root may write a mode 555 one.
touch "$tmp/file"
for bad in "$tmp/file" "$tmp/file/sub"; do
  rc=0
  "$dump" --keep "$bad" -- "$sample" --pes 2 >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 2 ] || fail "--keep $bad: exit $rc, want 2"
  grep -q -- "pto-dump: --keep $bad: " "$tmp/err" || fail "--keep $bad: message '$(cat "$tmp/err")'"
  [ ! -s "$tmp/out" ] || fail "--keep $bad: the program ran"
done
"$dump" --help | grep -q -- '--keep DIR' || fail "--help does not name --keep's DIR"
rc=0
"$dump" --keep '' -- "$sample" --pes 2 >"$tmp/out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--keep '': exit $rc, want 2"

# A stage the kernels do not have (sharding: the sample does not use pto::parallel) is exit 1,
# and the message says why, not that no kernel was traced.
rc=0
"$dump" --stages sharding -- "$sample" --pes 2 >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] || fail "--stages sharding: exit $rc, want 1"
grep -q 'of the stages asked for was written' "$tmp/err" || fail "--stages sharding: '$(cat "$tmp/err")'"
"$dump" --help | grep -q 'sharding' || fail "--help does not list the sharding stage"

# A bad flag is exit 2; the program's failure is its exit status; a missing program is 127.
rc=0
"$dump" --stages bogus -- "$sample" >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--stages bogus: exit $rc, want 2"
rc=0
"$dump" -- "$sample" --pes 0 >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a failing program (exit 2): pto-dump exited $rc"
rc=0
"$dump" -- "$tmp/no_such_program" >/dev/null 2>&1 || rc=$?
[ $rc -eq 127 ] || fail "a missing program: exit $rc, want 127"
"$dump" --help | grep -q -- '--stages' || fail "--help does not list --stages"
echo "pto_dump_test: PASS"
