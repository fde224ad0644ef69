// sites.h - The op ids of a program and its call-site table, numbered once (the pipeline's
// number_sites stage): every later stage names an op by its id, the tile plan and the fusion
// plan are keyed by ids, and a runtime call's `site` argument is the id of the op it serves.
#pragma once

#include "pto/ir/program.h"

#include <compare>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace pto::codegen {

/// An op's id: its index in pre-order over the program (loop bodies right after their loop op,
/// the bodies of a paths op right after it, path by path). Equal for copies of a program.
using OpId = int;
inline constexpr OpId kNoOp = -1;

/// A region of the program: an op list walked in order. The kernel body is {kNoOp, 0}; the body
/// of loop op L is {L, 0}; path k of paths op P is {P, k}. Equal for copies of a program.
struct RegionId {
  OpId owner = kNoOp;
  int path = 0;
  auto operator<=>(const RegionId &) const = default;
};

/// The numbering of one program. It keeps pointers to that program's ops: the program must
/// outlive the table and must not move or change (PlannedProgram owns both, pipeline.h).
class SiteTable {
public:
  SiteTable() = default;
  /// Numbers the ops of `p` in pre-order.
  explicit SiteTable(const ir::Program &p);

  /// How many ops the program has (its sites: one per op, then one per element read).
  size_t size() const { return ops_.size(); }
  /// "file:line: op" per op id, the op as the user called it (ir::site_name, with Op::user_op
  /// for the inner ops of a composite), then "file:line: at" per element read (read_site);
  /// what runtime errors name (Executable::sites).
  const std::vector<std::string> &names() const { return names_; }
  /// The site of element read `read` (SymExpr::read: a Tensor::at call of the program), where
  /// its run-time index errors point; `fallback` (the op evaluating it) for a read the program
  /// does not list.
  int read_site(int64_t read, int fallback) const;
  /// The id of `op`, which must be an op of the numbered program (InternalError otherwise).
  OpId of(const ir::Op &op) const;
  /// The op with id `id` (InternalError when out of range).
  const ir::Op &op(OpId id) const;
  /// The id of the first op (in pre-order) with `v` among its outputs; kNoOp for values no op
  /// outputs (parameters, views, shmem data).
  OpId def_site(ir::ValueId v) const;
  /// The id of region `body`, which must be the kernel body, a loop body or a path body of the
  /// numbered program (InternalError otherwise).
  RegionId region_of(const std::vector<ir::Op> &body) const;
  /// The ops of region `r` (InternalError for a region the program does not have).
  const std::vector<ir::Op> &region(RegionId r) const;
  /// Every region, in pre-order (the kernel body first).
  std::vector<RegionId> regions() const;

private:
  void number(const std::vector<ir::Op> &ops, RegionId region);

  std::vector<const ir::Op *> ops_;
  std::vector<std::string> names_;
  size_t n_reads_ = 0;
  std::unordered_map<const ir::Op *, OpId> ids_;
  std::map<ir::ValueId, OpId> def_site_;
  std::map<RegionId, const std::vector<ir::Op> *> regions_;
  std::unordered_map<const std::vector<ir::Op> *, RegionId> region_ids_;
};

/// "kernel", "loop i<N> (op <L>)" or "path <k> of op <P>": how dumps name a region.
std::string region_name(const SiteTable &sites, RegionId r);

} // namespace pto::codegen
