// shape_rules.h - The two rules every op that takes a valid shape or a window applies, in one
// place (internal to dsl/). Each is checked now for the parts known at trace time (ShapeError at
// the caller's line, naming the op) and, for the parts known only at run time, by a Check op
// that fails the kernel call with the same ShapeError text (both executors), so a rule never
// depends on whether a value happened to be concrete.
//
// - Valid shapes (full, reshape, view, shmem_view): one entry per dim and
//   0 <= valid_shape[d] <= shape[d] (as PyPTO: "the valid shape cannot exceed the parent shape").
// - Windows (view, assemble): per dim 0 <= offset, and offset + extent <= the parent's extent
//   unless the extent is 0 (an empty window touches nothing, e.g. a tile past a valid region).
//   A view without a valid_shape declares its whole shape (extent = shape; its valid shape is
//   inferred within it) and must fit in the parent's shape. A view with a valid_shape, and an
//   assemble (which writes its input's valid region), declare that valid extent; it must fit in
//   the parent's shape, or for a parent that is itself a view given a valid_shape, in that
//   valid_shape (Value::extent: the part of a view known to lie inside its root). This is
//   PyPTO's rule for tails (a static tile may run past the end when its valid_shape does not,
//   reference §3.3); unlike PyPTO, a window without a valid_shape that leaves its parent is an
//   error rather than silently clipped by the inferred valid shape.
// - Shmem windows (distributed.h) follow the same window rule with DistributedError: a
//   shmem_view's whole shape must fit in the window it views (the data, or the view it was made
//   from), a put's src shape in the view it writes, and every op that takes a view checks that
//   the view lies in the data (views are plain structs: a hand-edited one is caught there).
//   PE numbers (dst_pe, src_pe, target_pe) must lie in [0, n_pes) of the group, by require_index.
//
// Messages name the dim that fails and print exact values (a window's end is never wrapped,
// ir::format_check's `{+}`); a parent is named as the user knows it (value_phrase), not by an
// internal value name.
#pragma once

#include "pto/ir/recorder.h"

#include <source_location>
#include <string>
#include <vector>

namespace pto::trace {

using SrcLoc = std::source_location;

/// The valid-shape rule for `valid` of an op whose result has `shape`: ShapeError now for a rank
/// mismatch or a concrete entry outside [0, shape[d]]; a Check op for the rest.
void check_valid_shape(ir::Recorder &r, const std::vector<SymbolicScalar> &valid,
                       const std::vector<SymbolicScalar> &shape, const char *op, const SrcLoc &loc);

/// A window to check: `offsets` into a parent (of shape `parent_shape`) that it must fit in
/// `parent_extent` of, touching `extent` per dim (at most `bound`, the window's shape).
/// `parent` names the parent in messages (value_phrase). `hint` adds how to give a tail window
/// (views without a valid_shape). `error`: the class of the error (ShapeError for tensors,
/// DistributedError for shmem windows).
struct Window {
  std::vector<SymbolicScalar> offsets, extent, bound, parent_extent, parent_shape;
  std::string parent;
  bool hint = false;
  ir::CheckError error = ir::CheckError::Shape;
};
/// The window rule: the error now for a dim that is known to break it; a Check op for the dims
/// known only at run time. Ranks must already agree.
void check_window(ir::Recorder &r, const Window &w, const char *op, const SrcLoc &loc);

/// Requires a <= b of every kernel call, as the rules above do: nothing when it is provable
/// now, the error `err` names (`loc`, `op`, message) now when it is known to fail, else a Check
/// op. `message` is an ir::format_check message, its `{}` filled with `args`.
void require_le(ir::Recorder &r, const SymbolicScalar &a, const SymbolicScalar &b,
                const std::string &message, const std::vector<SymbolicScalar> &args, const char *op,
                const SrcLoc &loc, ir::CheckError err = ir::CheckError::Shape);

/// Requires 0 <= i < n of every kernel call (an index, a PE number), as require_le.
void require_index(ir::Recorder &r, const SymbolicScalar &i, const SymbolicScalar &n,
                   const std::string &message, const std::vector<SymbolicScalar> &args,
                   const char *op, const SrcLoc &loc, ir::CheckError err);

/// How messages name `v`: a kernel parameter by its name in quotes ('arg1'), else by what it is
/// ("the view [8, 8] of 'arg1'", "the local tensor [4, 8]", "the shmem data [4, 8]").
std::string value_phrase(const ir::Program &p, const ir::Value &v);

/// The extent a window into `v` that declares a valid extent must fit in: a view's
/// Value::extent, else its shape.
const std::vector<SymbolicScalar> &window_extent(const ir::Value &v);

} // namespace pto::trace
