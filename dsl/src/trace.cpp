// trace.cpp - The tracing recorder, Tensor accessors, tile-shape capture and traced loops.
#include "pto/control.h"
#include "pto/ir/recorder.h"
#include "pto/tile.h"

#include <fmt/format.h>

#include <atomic>
#include <exception>

namespace pto::ir {
namespace {
thread_local Recorder *t_current = nullptr;
std::atomic<uint64_t> g_next_trace{1};
} // namespace

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
    throw Error(loc, op,
                "no kernel is being traced; call pto ops inside a function passed to pto::jit");
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
  scopes_.back()->push_back(std::move(op));
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
  if (!region_within(regions_.back(), v.region))
    throw ShapeError(loc, op,
                     "tensor '" + v.name +
                         "' was created inside a pto::loop body and is used after the loop; "
                         "assemble it into a tensor created before the loop");
  if (deferred && !flushing_) {
    ValueId root = v.kind == ValueKind::View ? v.base : v.id;
    if (deferred->watches(root))
      deferred_used_.push_back(root);
  }
  return t.id();
}

SymbolicScalar Recorder::open_loop(Op loop_op) {
  flush_deferred();
  loop_op.loop_id = prog_.n_loops++;
  SymbolicScalar index = SymbolicScalar::symbol(SymKind::LoopIndex, loop_op.loop_id, 0,
                                                "i" + std::to_string(loop_op.loop_id));
  scopes_.back()->push_back(std::move(loop_op));
  scopes_.push_back(&scopes_.back()->back().body);
  int region = static_cast<int>(region_parent_.size());
  region_parent_.push_back(regions_.back());
  regions_.push_back(region);
  return index;
}

void Recorder::close_loop() {
  flush_deferred();
  scopes_.pop_back();
  regions_.pop_back();
}

int Recorder::group_index(const std::string &group, int n_pes, const char *op,
                          const std::source_location &loc) {
  if (group.empty() || group.size() > 127)
    throw DistributedError(loc, op,
                           fmt::format("group name must be 1-127 bytes, got {} bytes",
                                       group.size()));
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
  int size = 0;
  if (group == kWorldGroup) {
    size = world_n_pes;
  } else if (auto it = known_groups.find(group); it != known_groups.end()) {
    size = it->second;
  } else {
    std::string known = kWorldGroup;
    for (auto &[name, n] : known_groups)
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
  prog_.groups.push_back(Group{group, n_pes, 0, 0, format_location(loc)});
  return static_cast<int>(prog_.groups.size() - 1);
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

static const ir::Value &value_of(const Tensor &t) {
  if (t.is_empty() || !t.program())
    throw ShapeError("<unknown>", "Tensor", "empty tensor handle");
  // The program a tensor points into lives only while its kernel is traced.
  auto *r = Recorder::current_or_null();
  if (!r || r->program().trace_id != t.trace_id())
    throw ShapeError("<unknown>", "Tensor",
                     "tensor %t" + std::to_string(t.id()) +
                         " is used outside the trace of the kernel that created it");
  return r->program().value(t.id());
}

const std::vector<SymbolicScalar> &Tensor::shape() const { return value_of(*this).shape; }
const std::vector<SymbolicScalar> &Tensor::valid_shape() const { return value_of(*this).valid; }
DataType Tensor::dtype() const { return value_of(*this).dtype; }
int Tensor::dim() const { return static_cast<int>(value_of(*this).shape.size()); }
const std::string &Tensor::name() const { return value_of(*this).name; }
SymbolicScalar Tensor::shape(int i, std::source_location loc) const {
  int r = dim();
  int a = i < 0 ? i + r : i;
  if (a < 0 || a >= r)
    throw ShapeError(loc, "shape", fmt::format("dim {} is out of range for rank {}", i, r));
  return shape()[static_cast<size_t>(a)];
}

void set_vec_tile_shapes(std::vector<int64_t> dims, std::source_location loc) {
  auto &r = Recorder::current("set_vec_tile_shapes", loc);
  if (dims.empty() || dims.size() > 4)
    throw TileShapeError(loc, "set_vec_tile_shapes",
                         fmt::format("expected 1 to 4 tile dims, got {}", dims.size()));
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] <= 0)
      throw TileShapeError(loc, "set_vec_tile_shapes",
                           fmt::format("tile dim {} must be > 0, got {}", i, dims[i]));
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
void set_vec_tile_shapes(int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                         std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{d0, d1, d2, d3}, loc);
}
std::vector<int64_t> get_vec_tile_shapes() {
  auto *r = Recorder::current_or_null();
  return r ? r->vec_tile.vec : std::vector<int64_t>{};
}

LoopRange::LoopRange(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
                     std::string name, std::source_location loc)
    : start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)),
      name_(std::move(name)), loc_(loc) {
  if (step_.is_concrete() && step_.concrete() <= 0)
    throw SymbolicError(loc, "loop", fmt::format("step must be > 0, got {}", step_.concrete()));
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
  if (range_->open_) {
    Recorder::current("loop", range_->loc_).close_loop();
    range_->open_ = false;
  }
  return false;
}

LoopRange loop(SymbolicScalar stop, std::source_location loc) {
  return LoopRange(0, std::move(stop), 1, "", loc);
}
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, std::source_location loc) {
  return LoopRange(std::move(start), std::move(stop), 1, "", loc);
}
LoopRange loop(SymbolicScalar start, SymbolicScalar stop, SymbolicScalar step,
               std::source_location loc) {
  return LoopRange(std::move(start), std::move(stop), std::move(step), "", loc);
}

} // namespace pto
