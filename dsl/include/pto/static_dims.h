// static_dims.h - pto::StaticDims: a static shape written with integers or with concrete
// SymbolicScalars (such as `x.shape(0)` of a STATIC kernel parameter), so that a PyPTO line
// `pypto.view(x, [x.shape[0], 16], [0, 0])` ports without `.concrete()` (issue 13, item 2).
#pragma once

#include "pto/symbolic.h"

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <vector>

namespace pto {

/// The static extents an op takes (view and shmem_view shapes, the inline shmem ops' shapes).
/// Built implicitly from `{16, x.shape(1)}`, a `std::vector<int64_t>` or a
/// `std::vector<SymbolicScalar>` (`x.shape()`). Every entry must be concrete when the op uses it:
/// a run-time entry (a DYNAMIC dim, a loop index, a tensor element) is a ShapeError at the op's
/// line, "view: shape entry 1 is not static (N); ...", since a tile's size is fixed when the
/// kernel is compiled (PyPTO: the same; valid extents are the run-time part, `.valid_shape`).
class StaticDims {
public:
  StaticDims(std::initializer_list<SymbolicScalar> dims) : dims_(dims) {}
  StaticDims(const std::vector<int64_t> &dims) : dims_(dims.begin(), dims.end()) {}
  StaticDims(const std::vector<SymbolicScalar> &dims) : dims_(dims) {}
  /// The entries as integers; ShapeError (as above) naming `op` at `loc` for a run-time entry.
  std::vector<int64_t> resolve(const char *op, std::source_location loc) const;
  size_t size() const { return dims_.size(); }
  const std::vector<SymbolicScalar> &dims() const { return dims_; }

private:
  std::vector<SymbolicScalar> dims_;
};

} // namespace pto
