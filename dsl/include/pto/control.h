// control.h - Traced control flow, as PyPTO `pypto.loop` (reference §1.4). A loop is recorded
// once with a symbolic index, not unrolled: the body runs once at trace time.
#pragma once

#include "pto/symbolic.h"

#include <source_location>
#include <string>

namespace pto {

/// `for (auto i : pto::loop(start, stop, step)) { ... }` records one loop whose index `i` is a
/// run-time SymbolicScalar (start, start+step, ... while < stop). Bounds may be symbolic.
/// Throws SymbolicError when `step` is a concrete value <= 0; a run-time step <= 0 runs no
/// iteration. Ops traced in the body belong to the loop; tensors created in the body may not be
/// used after it (assemble them into a tensor created outside).
class LoopRange {
public:
  LoopRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step, std::string name,
            std::source_location loc);
  class iterator {
  public:
    SymbolicScalar operator*() const;
    iterator &operator++();
    bool operator!=(const iterator &) const;

  private:
    friend class LoopRange;
    LoopRange *range_ = nullptr;
    bool done_ = false;
  };
  iterator begin();
  iterator end() { return iterator{}; }

private:
  friend class iterator;
  SymbolicScalar start_, stop_, step_, index_;
  std::string name_;
  std::source_location loc_;
  bool open_ = false;
};

/// A loop over [0, stop).
LoopRange loop(SymbolicScalar stop, std::source_location loc = std::source_location::current());
/// A loop over [start, stop) with step 1.
LoopRange loop(SymbolicScalar start, SymbolicScalar stop,
               std::source_location loc = std::source_location::current());
/// A loop over [start, stop) with `step`.
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
               std::source_location loc = std::source_location::current());

} // namespace pto
