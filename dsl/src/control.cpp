// control.cpp - Traced control flow of control.h: pto::loop and loop_unroll (a body traced once,
// or once per unroll factor), pto::cond (PyPTO path enumeration), is_loop_begin/end.
#include "pto/control.h"

#include "pto/ir/recorder.h"

#include "trace_checks.h"

#include <algorithm>
#include <exception>
#include <fmt/format.h>
#include <limits>

namespace pto {

using ir::Recorder;

namespace {
constexpr const char *kLeftEarly =
    "the loop body was left early (break or return); a pto::loop body is traced, not run per "
    "iteration: use pto::cond for run-time decisions";
} // namespace

LoopRange::LoopRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                     LoopOptions opts, std::source_location loc)
    : start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)),
      opts_(std::move(opts)), loc_(loc), uncaught_(std::uncaught_exceptions()) {
  if (step_.is_concrete() && step_.concrete() <= 0)
    throw SymbolicError(loc, "loop", fmt::format("step must be > 0, got {}", step_.concrete()));
  for (int64_t k : opts_.unroll_list)
    if (k <= 0)
      throw ArgumentError(loc, "loop", fmt::format("unroll_list factors must be > 0, got {}", k));
}

LoopRange::~LoopRange() noexcept(false) {
  // Throwing here is how a `break`/`return` out of the traced body is reported; never while an
  // exception is already unwinding the body.
  if (abandon() && std::uncaught_exceptions() <= uncaught_)
    throw SymbolicError(loc_, "loop", kLeftEarly);
}

bool LoopRange::abandon() {
  if (!open_)
    return false;
  open_ = false;
  if (auto *r = Recorder::current_or_null())
    r->abandon_loop(loop_id_);
  return true;
}

LoopRange::iterator LoopRange::begin() {
  auto &r = Recorder::current("loop", loc_);
  ir::Op op;
  op.kind = ir::OpKind::Loop;
  op.where = loc_;
  op.start = start_;
  op.stop = stop_;
  op.step = step_;
  index_ = r.open_loop(std::move(op));
  loop_id_ = static_cast<int>(index_.expr().a);
  open_ = true;
  iterator it;
  it.range_ = this;
  return it;
}

SymbolicScalar LoopRange::iterator::operator*() const { return range_->index_; }
LoopRange::iterator &LoopRange::iterator::operator++() {
  done_ = true;
  return *this;
}
bool LoopRange::iterator::operator!=(const iterator &) const {
  if (!done_)
    return true;
  if (!range_->open_)
    return false;
  if (Recorder::current("loop", range_->loc_).close_loop()) {
    done_ = false; // the same index again, for the next cond path
    return true;
  }
  range_->open_ = false;
  return false;
}

LoopRange loop(SymbolicScalar stop, LoopOptions opts, std::source_location loc) {
  return LoopRange(0, std::move(stop), 1, std::move(opts), loc);
}
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, LoopOptions opts,
               std::source_location loc) {
  return LoopRange(std::move(start), std::move(stop), 1, std::move(opts), loc);
}
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step, LoopOptions opts,
               std::source_location loc) {
  return LoopRange(std::move(start), std::move(stop), std::move(step), std::move(opts), loc);
}

LoopUnrollRange::LoopUnrollRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                                 std::vector<int64_t> factors, std::source_location loc)
    : start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)), cur_(start_),
      loc_(loc), uncaught_(std::uncaught_exceptions()) {
  if (step_.is_concrete() && step_.concrete() <= 0)
    throw SymbolicError(loc, "loop_unroll",
                        fmt::format("step must be > 0, got {}", step_.concrete()));
  for (int64_t k : factors)
    if (k <= 0)
      throw ArgumentError(loc, "loop_unroll", fmt::format("unroll factors must be > 0, got {}", k));
  // As PyPTO: de-duplicated, descending, 1 always present.
  factors.push_back(1);
  std::sort(factors.begin(), factors.end(), std::greater<>());
  factors.erase(std::unique(factors.begin(), factors.end()), factors.end());
  factors_ = std::move(factors);
}

LoopUnrollRange::~LoopUnrollRange() noexcept(false) {
  if (sub_ && sub_->abandon() && std::uncaught_exceptions() <= uncaught_)
    throw SymbolicError(loc_, "loop_unroll", kLeftEarly);
}

bool LoopUnrollRange::open_next() {
  while (next_factor_ < factors_.size()) {
    int64_t k = factors_[next_factor_++];
    // The last loop (k = 1) runs to `stop` itself, as pto::loop does.
    SymbolicScalar end = k == 1 ? stop_ : unroll_end(k);
    SymbolicScalar from = cur_;
    cur_ = end;
    if (from.is_concrete() && end.is_concrete() && from.concrete() >= end.concrete())
      continue; // no iteration: nothing to trace
    sub_ = std::make_unique<LoopRange>(from, end, unroll_step(k), LoopOptions{}, loc_);
    sub_it_ = sub_->begin();
    return true;
  }
  return false;
}

SymbolicScalar LoopUnrollRange::unroll_step(int64_t k) const {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  if (step_.is_concrete()) {
    auto sk = mul_checked(step_.concrete(), k);
    return sk ? *sk : max;
  }
  return ternary(step_ > max / k, SymbolicScalar(max), step_ * k);
}

SymbolicScalar LoopUnrollRange::unroll_end(int64_t k) const {
  // A step * k past int64 is longer than any span: no whole unrolled step fits, the unrolled
  // loop ends where it starts (so step * k is never computed wrapped, at trace or run time).
  if (!step_.is_concrete()) {
    const SymbolicScalar fits = step_ <= std::numeric_limits<int64_t>::max() / k;
    return ternary(fits, stop_ - (stop_ - cur_) % SymDivisor(unroll_step(k), loc_), cur_);
  }
  if (!mul_checked(step_.concrete(), k))
    return cur_;
  if (!cur_.is_concrete() || !stop_.is_concrete())
    return stop_ - (stop_ - cur_) % SymDivisor(unroll_step(k), loc_); // checked when it runs
  // Exact for any int64 bounds: stop - cur in uint64, and a step * k past int64 is longer than
  // any span (no whole step fits).
  const int64_t from = cur_.concrete(), stop = stop_.concrete();
  if (from >= stop)
    return stop;
  const uint64_t span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(from);
  auto sk = mul_checked(step_.concrete(), k);
  const uint64_t rem = sk ? span % static_cast<uint64_t>(*sk) : span;
  return static_cast<int64_t>(static_cast<uint64_t>(stop) - rem);
}

LoopUnrollRange::iterator LoopUnrollRange::begin() {
  iterator it;
  it.range_ = this;
  it.done_ = !open_next();
  return it;
}

UnrollStep LoopUnrollRange::iterator::operator*() const {
  return UnrollStep{*range_->sub_it_, range_->factors_[range_->next_factor_ - 1]};
}
LoopUnrollRange::iterator &LoopUnrollRange::iterator::operator++() {
  ++range_->sub_it_;
  return *this;
}
bool LoopUnrollRange::iterator::operator!=(const iterator &) const {
  if (done_)
    return false;
  if (range_->sub_it_ != range_->sub_->end() || range_->open_next())
    return true;
  done_ = true;
  return false;
}

LoopUnrollRange loop_unroll(SymbolicScalar stop, std::vector<int64_t> factors,
                            std::source_location loc) {
  return LoopUnrollRange(0, std::move(stop), 1, std::move(factors), loc);
}
LoopUnrollRange loop_unroll(SymbolicScalar start, SymbolicScalar stop, std::vector<int64_t> factors,
                            std::source_location loc) {
  return LoopUnrollRange(std::move(start), std::move(stop), 1, std::move(factors), loc);
}
LoopUnrollRange loop_unroll(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                            std::vector<int64_t> factors, std::source_location loc) {
  return LoopUnrollRange(std::move(start), std::move(stop), std::move(step), std::move(factors),
                         loc);
}

bool cond(const SymbolicScalar &s, std::source_location loc) {
  if (s.is_concrete())
    return s.concrete() != 0;
  return Recorder::current("cond", loc).cond(s, loc);
}

namespace {
SymbolicScalar loop_position(const SymbolicScalar &i, SymKind kind, const char *op,
                             const std::source_location &loc) {
  const SymExpr &e = i.expr();
  if (e.tag != SymExpr::Tag::Symbol || e.sym != SymKind::LoopIndex)
    throw ArgumentError(loc, op,
                        "not loop index: `" + i.str() +
                            "` is not the index a pto::loop yields; pass the loop variable itself");
  auto &r = Recorder::current(op, loc);
  if (!r.loop_open(static_cast<int>(e.a)))
    throw ArgumentError(loc, op,
                        "not loop index: `" + e.name +
                            "` is the index of a pto::loop whose body is not being traced here");
  return SymbolicScalar::symbol(kind, e.a, 0, fmt::format("{}({})", op, e.name));
}
} // namespace

SymbolicScalar is_loop_begin(const SymbolicScalar &i, std::source_location loc) {
  return loop_position(i, SymKind::LoopBegin, "is_loop_begin", loc);
}
SymbolicScalar is_loop_end(const SymbolicScalar &i, std::source_location loc) {
  return loop_position(i, SymKind::LoopEnd, "is_loop_end", loc);
}

} // namespace pto
