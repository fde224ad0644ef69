// trace.cpp - The tracing recorder, Tensor accessors (incl. element reads) and tile-shape
// capture. Traced control flow is in control.cpp.
#include "pto/control.h"
#include "pto/env.h"
#include "pto/ir/recorder.h"
#include "pto/tile.h"

#include "trace_checks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <fmt/format.h>
#include <functional>

namespace pto::ir {
namespace {
thread_local Recorder *t_current = nullptr;
std::atomic<uint64_t> g_next_trace{1};

bool is_loop_symbol(SymKind k) {
  return k == SymKind::LoopIndex || k == SymKind::LoopBegin || k == SymKind::LoopEnd;
}

/// True when an op of `ops` (or of their bodies) writes storage root `root`.
bool writes_root(const Program &p, const std::vector<Op> &ops, ValueId root) {
  for (const Op &op : ops) {
    for (ValueId o : op.outputs)
      if (p.root(o).id == root)
        return true;
    if (writes_root(p, op.body, root))
      return true;
    for (auto &path : op.paths)
      if (writes_root(p, path.body, root))
        return true;
  }
  return false;
}
} // namespace

/// An open pto::loop: where its Loop op is, and the path enumeration of its body (control.h).
struct LoopFrame {
  int loop_id = -1;
  std::source_location loc;
  std::vector<Op> *parent_scope = nullptr; ///< holds the Loop op at `loop_pos`
  size_t loop_pos = 0;
  int parent_region = 0;
  int pass_region = 0;         ///< the region of the pass being traced
  size_t shmems_at_pass = 0;   ///< Program::shmems size when the pass began
  std::vector<Op> pass_ops;    ///< the ops of the pass being traced
  std::vector<bool> forced;    ///< outcomes of the first conds of this pass
  std::vector<bool> decisions; ///< outcomes returned so far in this pass
  std::vector<Op::Path> paths; ///< finished paths
  /// This pass's conditions, and the last pass's.
  std::vector<SymbolicScalar> conds, prev_conds;
  std::source_location first_cond;
  bool has_first_cond = false;
};

Recorder::Recorder(std::string kernel_name) {
  prog_.name = std::move(kernel_name);
  prog_.trace_id = g_next_trace.fetch_add(1);
  scopes_.push_back(&prog_.body);
  prev_ = t_current;
  t_current = this;
}

Recorder::~Recorder() { t_current = prev_; }

Recorder &Recorder::current(const char *op, const std::source_location &loc) {
  if (!t_current)
    throw ArgumentError(loc, op,
                        "no kernel is being traced; call pto ops inside a function passed to "
                        "pto::jit");
  return *t_current;
}

Recorder *Recorder::current_or_null() { return t_current; }

ValueId Recorder::add_value(Value v) {
  v.id = static_cast<ValueId>(prog_.values.size());
  v.region = regions_.back();
  if (v.name.empty())
    v.name = "t" + std::to_string(v.id);
  prog_.values.push_back(std::move(v));
  return prog_.values.back().id;
}

void Recorder::emit(Op op) {
  // Deferred work is traced first: everything before a shmem or control-flow op (it may order
  // against the deferred exchanges), else the work whose values an op has used.
  if (deferred && !flushing_) {
    auto family = op_info(op.kind).family;
    if (family == OpFamily::Shmem || family == OpFamily::Control)
      flush_deferred();
    auto used = std::move(deferred_used_);
    deferred_used_.clear();
    for (ValueId root : used)
      flush_deferred(root);
  }
  check_op(op);
  count_op(op);
  if (UserOpScope::active()) // the composite the user called names its inner ops
    op.user_op = UserOpScope::active();
  scopes_.back()->push_back(std::move(op));
}

void Recorder::count_op(const Op &op) {
  if (max_ops_ == 0)
    max_ops_ = env::read_integer(env::var("PTO_MAX_OPS"), op.where,
                                 fmt::format(" (tracing kernel '{}')", prog_.name))
                   .value_or(kMaxKernelOps);
  if (++n_ops_ <= max_ops_)
    return;
  throw CompileError(
      op.where, op.user_op ? op.user_op : op_info(op.kind).name,
      fmt::format("kernel '{}' traces more than {} ops (the limit{}); this is op {}. JIT compile "
                  "time grows with the program (a few ms per op): split the work into several "
                  "kernels, or use pto::loop instead of a host loop, or raise PTO_MAX_OPS",
                  prog_.name, max_ops_, max_ops_ == kMaxKernelOps ? "" : ", from PTO_MAX_OPS",
                  n_ops_));
}

void Recorder::emit_check(Op op) {
  count_op(op);
  check_symbols(op.holds, op.label.c_str(), op.where);
  bool reads = mentions(op.holds, SymKind::TensorElement);
  for (auto &a : op.args) {
    check_symbols(a, op.label.c_str(), op.where);
    reads = reads || mentions(a, SymKind::TensorElement);
  }
  auto &scope = *scopes_.back();
  if (reads) {
    scope.push_back(std::move(op));
    return;
  }
  size_t at = 0;
  for (; at < scope.size() && scope[at].kind == OpKind::Check; ++at)
    if (scope[at].holds.same_as(op.holds))
      return;
  scope.insert(scope.begin() + static_cast<std::ptrdiff_t>(at), std::move(op));
}

void Recorder::check_symbols(const SymbolicScalar &s, const char *op,
                             const std::source_location &loc) const {
  if (s.is_concrete())
    return;
  if (s.expr().nodes > kMaxSymNodes)
    throw SymbolicError(loc, op,
                        fmt::format("a symbolic expression of {} nodes (written out, a shared "
                                    "part counted at each use) is above the limit of {}; an "
                                    "expression that doubles itself in a loop (`s = s + s`) "
                                    "grows so: build it from smaller terms",
                                    s.expr().nodes, kMaxSymNodes));
  for_each_symbol(s, [&](const SymExpr &e) {
    if (e.sym == SymKind::TensorElement) {
      if (static_cast<uint64_t>(e.b) != prog_.trace_id || e.a < 0 ||
          static_cast<size_t>(e.a) >= prog_.values.size())
        throw SymbolicError(loc, op,
                            "element read `" + SymbolicScalar(std::make_shared<SymExpr>(e)).str() +
                                "` belongs to another kernel's trace (kept from an earlier "
                                "pto::jit call?); element reads cannot cross kernels or traces");
      const Value &v = prog_.value(static_cast<ValueId>(e.a));
      if (!region_within(regions_.back(), v.region))
        throw SymbolicError(loc, op,
                            "element read of tensor '" + v.name +
                                "' is used outside the pto::loop body (or cond path) that "
                                "created the tensor; read it inside that body");
    } else if (is_loop_symbol(e.sym) && !loop_open(static_cast<int>(e.a))) {
      throw SymbolicError(loc, op,
                          "`" + e.name +
                              "` belongs to a pto::loop whose body is not being traced here; "
                              "use a loop's index only inside its body");
    }
  });
}

void Recorder::check_op(const Op &op) const {
  const char *name = op_info(op.kind).name;
  auto check = [&](const SymbolicScalar &s) { check_symbols(s, name, op.where); };
  auto check_all = [&](const std::vector<SymbolicScalar> &v) {
    for (auto &s : v)
      check(s);
  };
  check(op.pe);
  check(op.target_pe);
  check(op.diagonal);
  check(op.start);
  check(op.stop);
  check(op.step);
  check_all(op.view_offsets);
  check_all(op.view_valid);
  if (op.slots)
    check_all(op.slots->view_offsets);
  auto check_value = [&](ValueId id) {
    if (id < 0 || static_cast<size_t>(id) >= prog_.values.size())
      return; // the verifier reports bad ids
    const Value &v = prog_.value(id);
    check_all(v.valid);
    check_all(v.offsets);
  };
  for (ValueId id : op.inputs)
    check_value(id);
  for (ValueId id : op.outputs) {
    check_value(id);
    if (id < 0 || static_cast<size_t>(id) >= prog_.values.size())
      continue;
    // Every result of every op obeys the size limit (the ops check with the user's spelling
    // first; this catches the rest under the op's own name).
    trace::check_result_size(prog_.value(id).shape, prog_.value(id).dtype, name, op.where);
    // Storage is sized when the kernel starts: shapes cannot wait for run-time reads.
    for (auto &d : prog_.value(id).shape)
      if (mentions(d, SymKind::TensorElement) || mentions(d, SymKind::LoopBegin) ||
          mentions(d, SymKind::LoopEnd))
        throw ShapeError(op.where, name,
                         "shape " + str(prog_.value(id).shape) +
                             " depends on a tensor element or loop position, known only at run "
                             "time; give a static shape and pass the run-time extent as "
                             "valid_shape");
  }
}

void Recorder::flush_deferred(ValueId root) {
  // Not while unwinding (a loop closed by a failing trace): a second exception would terminate.
  if (!deferred || flushing_ || std::uncaught_exceptions() > 0)
    return;
  flushing_ = true;
  struct Done {
    bool &flag;
    ~Done() { flag = false; }
  } done{flushing_};
  deferred->flush(*this, root);
  if (root == kNoValue)
    deferred_used_.clear();
}

bool Recorder::region_within(int inner, int outer) const {
  for (int r = inner; r >= 0; r = region_parent_[static_cast<size_t>(r)])
    if (r == outer)
      return true;
  return false;
}

ValueId Recorder::use(const Tensor &t, const char *op, const std::source_location &loc) const {
  if (t.is_empty())
    throw ShapeError(loc, op, "tensor operand is empty (a default-constructed pto::Tensor)");
  if (t.trace_id() != prog_.trace_id)
    throw ShapeError(loc, op,
                     "tensor %t" + std::to_string(t.id()) +
                         " belongs to another kernel's trace (kept from an earlier pto::jit "
                         "call?); tensors cannot cross kernels or traces");
  const Value &v = prog_.value(t.id());
  if (!region_within(regions_.back(), v.region)) {
    // A tensor of another cond path of a loop still being traced: that path does not run in
    // the same iteration.
    for (int r = v.region; r >= 0; r = region_parent_[static_cast<size_t>(r)])
      if (region_loop_[static_cast<size_t>(r)] >= 0 &&
          loop_open(region_loop_[static_cast<size_t>(r)]))
        throw ShapeError(loc, op,
                         "tensor '" + v.name +
                             "' was created on another path of this pto::loop body (pto::cond "
                             "traces each path separately); create it before the cond");
    throw ShapeError(loc, op,
                     "tensor '" + v.name +
                         "' was created inside a pto::loop body and is used after the loop; "
                         "assemble it into a tensor created before the loop");
  }
  if (deferred && !flushing_) {
    ValueId root = v.kind == ValueKind::View ? v.base : v.id;
    if (deferred->watches(root))
      deferred_used_.push_back(root);
  }
  return t.id();
}

SymbolicScalar Recorder::open_loop(Op loop_op) {
  if (frames_.size() >= static_cast<size_t>(kMaxLoopDepth))
    throw CompileError(loop_op.where, "loop",
                       fmt::format("{} pto::loop levels are already open around this one; at "
                                   "most {} loops may be nested",
                                   frames_.size(), kMaxLoopDepth));
  flush_deferred();
  count_op(loop_op);
  check_symbols(loop_op.start, "loop", loop_op.where);
  check_symbols(loop_op.stop, "loop", loop_op.where);
  check_symbols(loop_op.step, "loop", loop_op.where);
  loop_op.loop_id = prog_.n_loops++;
  SymbolicScalar index = SymbolicScalar::symbol(SymKind::LoopIndex, loop_op.loop_id, 0,
                                                "i" + std::to_string(loop_op.loop_id));
  auto f = std::make_unique<LoopFrame>();
  f->loop_id = loop_op.loop_id;
  f->loc = loop_op.where;
  f->parent_scope = scopes_.back();
  f->parent_region = regions_.back();
  scopes_.back()->push_back(std::move(loop_op));
  f->loop_pos = f->parent_scope->size() - 1;
  scopes_.push_back(&f->pass_ops);
  regions_.push_back(-1);
  start_pass(*f);
  frames_.push_back(std::move(f));
  return index;
}

void Recorder::start_pass(LoopFrame &f) {
  // Each pass gets its own region, so a tensor of one path is not visible in another.
  int region = static_cast<int>(region_parent_.size());
  region_parent_.push_back(f.parent_region);
  region_loop_.push_back(f.loop_id);
  regions_.back() = region;
  f.pass_region = region;
  f.shmems_at_pass = prog_.shmems.size();
  f.pass_ops.clear();
  f.decisions.clear();
  f.conds.clear();
}

bool Recorder::close_loop() {
  flush_deferred();
  LoopFrame &f = *frames_.back();
  if (f.decisions.size() < f.forced.size())
    throw SymbolicError(f.loc, "cond",
                        fmt::format("the loop body traced {} run-time conditions when re-run for "
                                    "the next path, {} before; conditions must depend only on "
                                    "traced values, not on host state that changes between passes",
                                    f.decisions.size(), f.forced.size()));
  if (!f.decisions.empty()) {
    if (prog_.shmems.size() != f.shmems_at_pass)
      throw DistributedError(f.loc, "loop",
                             "a shmem tensor is created inside a pto::loop body with pto::cond "
                             "paths: each path would get its own symmetric tensor, and PEs on "
                             "different paths would not meet. Keep the creation on every path: "
                             "put the pto::cond in an inner pto::loop(1) after it (the tensor "
                             "stays fresh per iteration), or create the tensor before the loop "
                             "and dist::shmem_reset it at the start of each iteration");
    SymbolicScalar guard;
    for (size_t k = 0; k < f.conds.size(); ++k) {
      SymbolicScalar lit = f.decisions[k] ? f.conds[k] : !f.conds[k];
      guard = k == 0 ? lit : sym_apply(SymOp::And, {guard, lit});
    }
    f.paths.push_back(Op::Path{guard, std::move(f.pass_ops)});
    // Depth-first: flip the last `true` outcome, drop the decisions after it.
    size_t j = f.decisions.size();
    while (j > 0 && !f.decisions[j - 1])
      --j;
    if (j > 0) {
      if (f.paths.size() >= static_cast<size_t>(kMaxCondPaths))
        throw CompileError(f.first_cond, "cond",
                           fmt::format("the loop body has more than {} paths (every run-time "
                                       "cond doubles them); merge conditions with & and |, or "
                                       "split the body into several loops",
                                       kMaxCondPaths));
      // Each path of an outer body traces the inner loops again, which enumerate their own
      // paths again: the passes multiply down a nest. Bound their product (this pass of every
      // open body, outermost first).
      int64_t passes = 1;
      for (const auto &g : frames_)
        passes =
            std::min<int64_t>(passes * static_cast<int64_t>(g->paths.size() + 1), int64_t{1} << 40);
      if (passes > kMaxNestedCondPaths)
        throw CompileError(f.first_cond, "cond",
                           fmt::format("{} nested pto::loop bodies with run-time cond paths "
                                       "would trace the innermost body more than {} times (the "
                                       "paths of nested bodies multiply: every path of an outer "
                                       "body traces the inner loops again); merge conditions "
                                       "with & and |, or move a cond out of the nest",
                                       frames_.size(), kMaxNestedCondPaths));
      f.forced.assign(f.decisions.begin(), f.decisions.begin() + static_cast<long>(j - 1));
      f.forced.push_back(false);
      f.prev_conds = f.conds;
      start_pass(f);
      return true;
    }
  }
  Op &loop_op = (*f.parent_scope)[f.loop_pos];
  if (f.paths.empty()) {
    loop_op.body = std::move(f.pass_ops);
  } else {
    Op paths;
    paths.kind = OpKind::Paths;
    paths.where = f.first_cond;
    paths.user_op = "cond"; // run-time failures in the guards name the op the user wrote
    paths.paths = std::move(f.paths);
    loop_op.body.push_back(std::move(paths));
  }
  scopes_.pop_back();
  regions_.pop_back();
  frames_.pop_back();
  return false;
}

void Recorder::abandon_loop(int loop_id) {
  if (!loop_open(loop_id))
    return;
  while (!frames_.empty()) {
    bool last = frames_.back()->loop_id == loop_id;
    scopes_.pop_back();
    regions_.pop_back();
    frames_.pop_back();
    if (last)
      break;
  }
}

bool Recorder::body_may_repeat() const {
  return std::any_of(frames_.begin(), frames_.end(), [](const auto &f) {
    const Op &l = (*f->parent_scope)[f->loop_pos];
    if (!l.start.is_concrete() || !l.stop.is_concrete() || !l.step.is_concrete())
      return true;
    const __int128 span = __int128{l.stop.concrete()} - l.start.concrete();
    return l.step.concrete() <= 0 || span > l.step.concrete(); // a concrete step <= 0 is refused
  });
}

bool Recorder::loop_open(int loop_id) const {
  return std::any_of(frames_.begin(), frames_.end(),
                     [&](const auto &f) { return f->loop_id == loop_id; });
}

const Op *Recorder::open_loop_op(int loop_id) const {
  for (const auto &f : frames_)
    if (f->loop_id == loop_id)
      return &(*f->parent_scope)[f->loop_pos];
  return nullptr;
}

void Recorder::check_cond_inputs(const LoopFrame &f, const SymbolicScalar &c,
                                 const std::source_location &loc) const {
  for_each_symbol(c, [&](const SymExpr &e) {
    if (e.sym != SymKind::TensorElement)
      return;
    const Value &v = prog_.value(static_cast<ValueId>(e.a));
    const Value &root = prog_.root(v.id);
    const char *why = nullptr;
    if (region_within(v.region, f.pass_region) || region_within(root.region, f.pass_region))
      why = "' is computed in this loop body";
    else if (writes_root(prog_, f.pass_ops, root.id))
      why = "' is written by an op earlier in this loop body";
    if (why)
      throw SymbolicError(loc, "cond",
                          "the condition reads tensor '" + root.name + why +
                              ", but conditions are evaluated at body entry, before the body "
                              "runs (as PyPTO); compute it before the loop");
  });
}

bool Recorder::cond(const SymbolicScalar &c, const std::source_location &loc) {
  check_symbols(c, "cond", loc);
  if (frames_.empty())
    throw SymbolicError(loc, "cond",
                        "condition `" + c.str() +
                            "` is only known at run time and needs an enclosing pto::loop "
                            "(PyPTO wraps kernel code in an implicit loop(1)); wrap the code in "
                            "`for (auto _ : pto::loop(1)) { ... }`");
  // Pending work that writes a tensor the condition reads is traced first (and then caught
  // as a write earlier in the body).
  for_each_symbol(c, [&](const SymExpr &e) {
    if (e.sym == SymKind::TensorElement)
      flush_deferred(prog_.root(static_cast<ValueId>(e.a)).id);
  });
  LoopFrame &f = *frames_.back();
  check_cond_inputs(f, c, loc);
  size_t k = f.decisions.size();
  bool outcome = true;
  if (k < f.forced.size()) {
    if (k >= f.prev_conds.size() || !f.prev_conds[k].same_as(c))
      throw SymbolicError(loc, "cond",
                          "the loop body traced condition `" + c.str() +
                              "` when re-run for the next path, where it traced `" +
                              (k < f.prev_conds.size() ? f.prev_conds[k].str() : "") +
                              "` before; conditions must depend only on traced values, not on "
                              "host state that changes between passes");
    outcome = f.forced[k];
  }
  if (!f.has_first_cond) {
    f.first_cond = loc;
    f.has_first_cond = true;
  }
  f.decisions.push_back(outcome);
  f.conds.push_back(c);
  return outcome;
}

int Recorder::group_index(const std::string &group, int n_pes, const char *op,
                          const std::source_location &loc) {
  if (group.empty() || group.size() > 127)
    throw DistributedError(
        loc, op, fmt::format("group name must be 1-127 bytes, got {} bytes", group.size()));
  if (n_pes <= 0)
    throw DistributedError(loc, op, fmt::format("n_pes must be > 0, got {}", n_pes));
  for (size_t i = 0; i < prog_.groups.size(); ++i)
    if (prog_.groups[i].name == group) {
      if (prog_.groups[i].n_pes != n_pes)
        throw DistributedError(loc, op,
                               fmt::format("n_pes mismatch for group '{}': {} here, {} before",
                                           group, n_pes, prog_.groups[i].n_pes));
      return static_cast<int>(i);
    }
  // The PEs that will run the kernel are known while tracing under pto::jit: catch an unknown
  // group or a size mismatch here, at the user's line, rather than at kernel entry.
  int size = known_group_size(group);
  if (size == 0) {
    std::string known = kWorldGroup;
    for (auto &[name, n] : known_groups)
      if (name != kWorldGroup) // the runtime registers "world" on its first use
        known += ", " + name;
    throw DistributedError(loc, op,
                           fmt::format("unknown group '{}'; use \"{}\" for all PEs or create it "
                                       "with World::create_group (known: {})",
                                       group, kWorldGroup, known));
  }
  if (size != n_pes)
    throw DistributedError(loc, op,
                           fmt::format("n_pes mismatch for group '{}': {} here, but the group has "
                                       "{} PEs",
                                       group, n_pes, size));
  prog_.groups.push_back(Group{group, n_pes, 0, 0, 0, format_location(loc), {}});
  return static_cast<int>(prog_.groups.size() - 1);
}

int Recorder::known_group_size(const std::string &name) {
  int size = 0;
  if (name == kWorldGroup)
    size = world_n_pes;
  else if (auto it = known_groups.find(name); it != known_groups.end())
    size = it->second;
  groups_looked_up[name] = size;
  return size;
}

TileShape capture_tile(const Recorder &r, size_t out_rank, const char *op,
                       const std::source_location &loc) {
  if (r.vec_tile.vec.empty())
    throw TileShapeError(loc, op, "no vec tile shape is set; call set_vec_tile_shapes first");
  if (r.vec_tile.vec.size() < out_rank)
    throw TileShapeError(loc, op,
                         fmt::format("tile shape rank {} is below the output rank {}; give one "
                                     "tile entry per output dim",
                                     r.vec_tile.vec.size(), out_rank));
  return r.vec_tile;
}

} // namespace pto::ir

namespace pto {

using ir::Recorder;

static const ir::Value &value_of(const Tensor &t, const std::source_location &loc, const char *op) {
  if (t.is_empty() || !t.program())
    throw ShapeError(loc, op, "empty tensor handle (a default-constructed pto::Tensor)");
  // The program a tensor points into lives only while its kernel is traced.
  auto *r = Recorder::current_or_null();
  if (!r || r->program().trace_id != t.trace_id())
    throw ShapeError(loc, op,
                     "tensor %t" + std::to_string(t.id()) +
                         " is used outside the trace of the kernel that created it (kept from "
                         "an earlier pto::jit call?); use a tensor only while its kernel traces");
  return r->program().value(t.id());
}

Tensor::Tensor(const ir::Program *prog, ir::ValueId id)
    : prog_(prog), id_(id), trace_(prog ? prog->trace_id : 0) {}

const std::vector<SymbolicScalar> &Tensor::shape(std::source_location loc) const {
  return value_of(*this, loc, "shape").shape;
}
const std::vector<SymbolicScalar> &Tensor::valid_shape(std::source_location loc) const {
  return value_of(*this, loc, "valid_shape").valid;
}
DataType Tensor::dtype(std::source_location loc) const {
  return value_of(*this, loc, "dtype").dtype;
}
int Tensor::dim(std::source_location loc) const {
  return static_cast<int>(value_of(*this, loc, "dim").shape.size());
}
const std::string &Tensor::name(std::source_location loc) const {
  return value_of(*this, loc, "name").name;
}
SymbolicScalar Tensor::shape(int i, std::source_location loc) const {
  const auto &s = value_of(*this, loc, "shape").shape;
  int r = static_cast<int>(s.size());
  int a = i < 0 ? i + r : i;
  if (a < 0 || a >= r)
    throw ShapeError(loc, "shape", fmt::format("dim {} is out of range for rank {}", i, r));
  return s[static_cast<size_t>(a)];
}

void set_vec_tile_shapes(std::vector<int64_t> dims, std::source_location loc) {
  auto &r = Recorder::current("set_vec_tile_shapes", loc);
  if (dims.empty() || dims.size() > 4)
    throw TileShapeError(loc, "set_vec_tile_shapes",
                         fmt::format("expected 1 to 4 tile dims, got {}", dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0)
      throw TileShapeError(loc, "set_vec_tile_shapes",
                           fmt::format("tile dim {} must be > 0, got {}", i, dims[i]));
    if (dims[i] > kMaxExtent)
      throw TileShapeError(loc, "set_vec_tile_shapes",
                           fmt::format("tile dim {} is {}, above {} (2^62, the largest extent "
                                       "of any dim)",
                                       i, dims[i], kMaxExtent));
  }
  r.vec_tile.vec = std::move(dims);
}
void set_vec_tile_shapes(int64_t d0, std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{d0}, loc);
}
void set_vec_tile_shapes(int64_t d0, int64_t d1, std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{d0, d1}, loc);
}
void set_vec_tile_shapes(int64_t d0, int64_t d1, int64_t d2, std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{d0, d1, d2}, loc);
}
void set_vec_tile_shapes(int64_t d0, int64_t d1, int64_t d2, int64_t d3, std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{d0, d1, d2, d3}, loc);
}
std::vector<int64_t> get_vec_tile_shapes() {
  auto *r = Recorder::current_or_null();
  return r ? r->vec_tile.vec : std::vector<int64_t>{};
}

SymbolicScalar Tensor::at(const std::vector<SymbolicScalar> &indices,
                          std::source_location loc) const {
  const char *op = "at";
  auto &r = Recorder::current(op, loc);
  ir::ValueId id = r.use(*this, op, loc);
  const ir::Value &v = r.program().value(id);
  if (v.kind == ir::ValueKind::Token)
    throw DTypeError(loc, op, "tensor '" + v.name + "' is a dependency token; it has no elements");
  if (v.shmem >= 0)
    throw DTypeError(loc, op,
                     "tensor '" + v.name +
                         "' is shmem data; read it with pto::distributed::shmem_get first");
  if (!is_supported(v.dtype) || (!is_int(v.dtype) && v.dtype != DT_BOOL))
    throw DTypeError(loc, op,
                     "reads int8, int16, int32, int64, uint8 and bool elements, got " +
                         pto::name(v.dtype) + " (tensor '" + v.name +
                         "'); cast it to an integer dtype first (pto::cast truncates)");
  if (indices.size() != v.shape.size())
    throw ShapeError(loc, op,
                     fmt::format("tensor '{}' has rank {}, got {} indices", v.name, v.shape.size(),
                                 indices.size()));
  std::vector<SymbolicScalar> idx = indices;
  for (size_t d = 0; d < idx.size(); ++d) {
    r.check_symbols(idx[d], op, loc);
    if (!idx[d].is_concrete())
      continue;
    int64_t i = idx[d].concrete();
    const SymbolicScalar &dim = v.shape[d];
    if (i < 0 && dim.is_concrete()) // a negative index counts from the end, as PyPTO
      i += dim.concrete();
    if (i < 0 || (dim.is_concrete() && i >= dim.concrete()))
      throw ShapeError(loc, op,
                       fmt::format("index {} is out of range [0, {}) in dim {} of tensor '{}'",
                                   idx[d].concrete(), dim.str(), d, v.name));
    idx[d] = i;
  }
  uint32_t offset_reads = 0;
  for (auto &o : v.offsets)
    offset_reads = std::max(offset_reads, o.expr().reads);
  auto &reads = r.program().element_reads;
  SymbolicScalar e = SymbolicScalar::tensor_element(id, r.program().trace_id, v.name, idx,
                                                    offset_reads, int64_t(reads.size()));
  reads.push_back(loc);
  if (e.expr().reads > kMaxReadNesting)
    throw SymbolicError(loc, op,
                        fmt::format("element reads nest {} deep here (reads in the indices, or "
                                    "in the offsets of the view read), more than {}",
                                    e.expr().reads, kMaxReadNesting));
  return e;
}

} // namespace pto
