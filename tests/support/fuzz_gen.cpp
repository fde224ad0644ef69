// fuzz_gen.cpp - See fuzz_gen.h: the case templates and their oracles. Every oracle evaluates
// the documented rules in 128-bit arithmetic (so that hostile values near INT64_MAX cannot
// overflow the oracle itself) on small integer data (exact in every dtype drawn).
#include "support/fuzz_gen.h"

#include "pto/pto.h"
#include "pto/runtime/world.h"
#include "pto/size_math.h"

#include "support/property_trace.h"
#include "support/rng.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <typeinfo>

namespace fuzz {

namespace dist = pto::distributed;
using prop::Val;
using pto::DataType;
using Shape = std::vector<int64_t>;
using i128 = __int128;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
/// A case whose data would pass this many bytes is never "valid": the rules may refuse it.
constexpr i128 kBigBytes = i128{256} << 20;
constexpr int64_t kSentinel = 77; ///< every output starts so: an element never written shows
constexpr int kSlots = 8;         ///< run-time scalars per case (the int64 `idx` parameter)

/// Values every template draws as hostile (sizes, offsets, bounds, reps).
const std::vector<int64_t> &hostile_values() {
  static const std::vector<int64_t> v = {0,
                                         -1,
                                         -2,
                                         kMin,
                                         kMin + 1,
                                         kMax,
                                         kMax - 1,
                                         kMax - 2,
                                         int64_t{1} << 31,
                                         (int64_t{1} << 31) - 1,
                                         int64_t{1} << 32,
                                         int64_t{1} << 40,
                                         int64_t{1} << 62,
                                         -(int64_t{1} << 40),
                                         -(int64_t{1} << 62),
                                         std::numeric_limits<int32_t>::max(),
                                         std::numeric_limits<int32_t>::min()};
  return v;
}

std::string i128_str(i128 v) {
  if (v == 0)
    return "0";
  const bool neg = v < 0;
  std::string s;
  for (i128 u = neg ? -v : v; u > 0; u /= 10)
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
  return neg ? "-" + s : s;
}

std::string shape_str(const Shape &s) { return prop::detail::shape_str(s); }

bool fits(i128 off, i128 size, i128 dim) { return off >= 0 && size >= 0 && off + size <= dim; }

/// numel * bytes of `s`, or -1 when a dim is negative; saturates at 2^100.
i128 bytes_of(const Shape &s, DataType dt) {
  constexpr i128 kCap = i128{1} << 100;
  i128 b = pto::bytes_of(dt);
  bool zero = false;
  for (int64_t d : s) {
    if (d < 0)
      return -1;
    zero = zero || d == 0;
    b = d != 0 && b > kCap / d ? kCap : b * (d == 0 ? 1 : d);
  }
  return zero ? 0 : b;
}

/// `x` wrapped to the integer dtype `dt` (two's complement; bool: 0/1).
int64_t wrap(DataType dt, int64_t x) {
  switch (dt) {
  case pto::DT_INT8:
    return static_cast<int8_t>(static_cast<uint64_t>(x));
  case pto::DT_INT16:
    return static_cast<int16_t>(static_cast<uint64_t>(x));
  case pto::DT_INT32:
    return static_cast<int32_t>(static_cast<uint64_t>(x));
  case pto::DT_UINT8:
    return static_cast<uint8_t>(static_cast<uint64_t>(x));
  case pto::DT_BOOL:
    return x != 0;
  default:
    return x;
  }
}

int64_t vget(const Val &v, int64_t k) {
  const auto u = static_cast<size_t>(k);
  return pto::is_float(v.dt) ? static_cast<int64_t>(v.f[u]) : v.i[u];
}
void vset(Val &v, int64_t k, int64_t x) {
  const auto u = static_cast<size_t>(k);
  if (pto::is_float(v.dt))
    v.f[u] = static_cast<double>(x);
  else
    v.i[u] = wrap(v.dt, x);
}
Val filled(DataType dt, const Shape &s, int64_t x) {
  Val v = prop::detail::make_val(dt, s);
  for (int64_t k = 0; k < v.numel(); ++k)
    vset(v, k, x);
  return v;
}

/// A run-time or concrete scalar of a kernel: a literal, element `slot` of the int64 `idx`
/// parameter (Tensor::at), or dim `dim` of parameter `param` minus `minus` (DYNAMIC dims).
struct Scal {
  int64_t v = 0;
  int slot = -1;
  int param = -1, dim = -1;
  int64_t minus = 0;
  bool rt() const { return slot >= 0 || dim >= 0; }
  std::string str() const {
    if (slot >= 0)
      return "idx[" + std::to_string(slot) + "]=" + std::to_string(v);
    if (dim >= 0)
      return "p" + std::to_string(param) + ".shape(" + std::to_string(dim) + ")-" +
             std::to_string(minus) + "=" + std::to_string(v);
    return std::to_string(v);
  }
  pto::SymbolicScalar sym(const std::vector<pto::Tensor> &t, int idx_param) const {
    if (slot >= 0)
      return t[static_cast<size_t>(idx_param)].at({slot});
    if (dim >= 0)
      return t[static_cast<size_t>(param)].shape(dim) - minus;
    return v;
  }
};

std::string list_str(const std::vector<Scal> &v) {
  std::string s = "{";
  for (size_t k = 0; k < v.size(); ++k)
    s += (k ? ", " : "") + v[k].str();
  return s + "}";
}

/// One rule a case must satisfy, in program order.
struct Check {
  bool ok = true;
  bool rt = false;     ///< decided only at run time
  bool either = false; ///< not ok, but the rules leave it open: an error or the values
  std::string type, op, reason;
  bool alloc = false; ///< either: a huge but legal size an executor may fail to allocate
};

class Gen : support::Rng {
public:
  Gen(uint64_t seed, uint64_t index) : Rng(case_seed(seed, index)) {
    c_.seed = seed;
    c_.index = index;
  }
  Case run();

private:
  Case c_;
  std::vector<int64_t> idx_; ///< the values of the `idx` parameter (run-time scalars)
  std::vector<Check> checks_;

  // ---- draws -------------------------------------------------------------------------------
  int64_t hostile() { return pick(hostile_values()); }
  /// `v` as a literal, or (probability p_rt) as a run-time element of idx.
  Scal scal(int64_t v, double p_rt) {
    Scal s;
    s.v = v;
    if (coin(p_rt) && idx_.size() < static_cast<size_t>(kSlots)) {
      s.slot = static_cast<int>(idx_.size());
      idx_.push_back(v);
    }
    return s;
  }
  /// An offset for a window of `size` in `dim`: inside mostly, just outside or hostile now and
  /// then.
  int64_t offset_value(int64_t dim, int64_t size) {
    const double r = frand(0, 1);
    if (r < 0.82 && size <= dim)
      return irand(0, dim - size);
    if (r < 0.9)
      return pick<int64_t>({dim - size + 1, -1, dim, dim + 1});
    return hostile();
  }
  /// A valid-shape entry for a dim of `dim`: in [0, dim] mostly (0 and dim included).
  int64_t valid_value(int64_t dim) {
    const double r = frand(0, 1);
    if (r < 0.8)
      return irand(0, std::max<int64_t>(dim, 0));
    if (r < 0.9)
      return pick<int64_t>({dim + 1, -1, dim + 60});
    return hostile();
  }
  /// A vec tile entry: small mostly; huge now and then; rarely invalid.
  int64_t tile_value() {
    const double r = frand(0, 1);
    if (r < 0.85)
      return pick<int64_t>({1, 2, 3, 4, 5, 8, 16, 17, 32, 64});
    if (r < 0.97)
      return pick<int64_t>(
          {int64_t{1} << 31, int64_t{1} << 40, int64_t{1} << 62, kMax, kMax - 1, 1000003});
    return pick<int64_t>({0, -1, kMin});
  }
  Shape tile(size_t rank) {
    Shape t;
    for (size_t d = 0; d < rank; ++d)
      t.push_back(tile_value());
    return t;
  }
  DataType dtype() {
    return pick<DataType>({pto::DT_FP32, pto::DT_FP32, pto::DT_INT32, pto::DT_FP16, pto::DT_BF16,
                           pto::DT_INT16, pto::DT_INT8, pto::DT_INT64, pto::DT_DOUBLE,
                           pto::DT_UINT8});
  }
  /// A dtype other than `dt` (for mismatches).
  DataType other_dtype(DataType dt) {
    DataType o = dt;
    while (o == dt)
      o = pick<DataType>({pto::DT_FP32, pto::DT_INT32, pto::DT_FP16, pto::DT_INT64});
    return o;
  }
  /// Integer data in [lo, hi] (exact in every dtype drawn; uint8 takes |x|).
  Val data(DataType dt, const Shape &s, int64_t lo = -20, int64_t hi = 20) {
    Val v = prop::detail::make_val(dt, s);
    for (int64_t k = 0; k < v.numel(); ++k) {
      int64_t x = irand(lo, hi);
      vset(v, k, dt == pto::DT_UINT8 ? (x < 0 ? -x : x) : x);
    }
    return v;
  }

  // ---- case building -----------------------------------------------------------------------
  void line(const std::string &s) { c_.listing.push_back(s); }
  void check(bool ok, bool rt, const std::string &type, const std::string &op,
             const std::string &reason, bool either = false) {
    checks_.push_back(Check{ok, rt, either && !ok, type, op, reason});
  }
  /// A size the rules allow that may still be too large to allocate (`ok`: it is not).
  void check_size(bool ok, const std::string &reason) {
    check(ok, false, "", "", reason, /*either=*/true);
    checks_.back().alloc = true;
  }
  void check_tile(const Shape &t, bool applies = true) {
    bool ok = true;
    for (int64_t e : t)
      ok = ok && e > 0 && e <= pto::kMaxExtent; // tile.h: each dim in [1, 2^62]
    if (applies)
      check(ok, false, "TileShapeError", "set_vec_tile_shapes", "tile-nonpositive");
  }
  /// Sets the expectation from the checks: the first failing trace-time check, else the
  /// failing run-time ones (any of them may report first), else values (or either).
  void resolve(bool any_rt);
  /// Appends the idx parameter's contents (one row per PE) when run-time scalars were drawn.
  int idx_param(size_t at) { return static_cast<int>(at); }
  void add_idx_arg() {
    Val v = prop::detail::make_val(pto::DT_INT64, {kSlots});
    for (size_t k = 0; k < idx_.size(); ++k)
      v.i[k] = idx_[k];
    for (auto &row : c_.args)
      row.push_back(v);
    for (auto &row : c_.want)
      row.push_back(v);
    line("idx = int64 [8] " + [&] {
      std::string s = "{";
      for (size_t k = 0; k < idx_.size(); ++k)
        s += (k ? ", " : "") + std::to_string(idx_[k]);
      return s + "}";
    }());
  }

  // ---- templates ---------------------------------------------------------------------------
  void prop_case();
  void window();
  void valid();
  void shape_ops();
  void loop();
  void shmem();
  void collective();
  void host();
  void kernel_call();
};

void Gen::resolve(bool any_rt) {
  for (const Check &k : checks_)
    if (!k.ok && !k.rt && !k.either) {
      c_.expect = Expect::Throw;
      c_.error_op = k.op;
      c_.feature = k.reason;
      // One op may test its rules in any order: every failing rule of that op is accepted.
      for (const Check &o : checks_)
        if (!o.ok && !o.rt && !o.either && o.op == k.op &&
            std::find(c_.error_types.begin(), c_.error_types.end(), o.type) == c_.error_types.end())
          c_.error_types.push_back(o.type);
      return;
    }
  std::vector<const Check *> rt;
  for (const Check &k : checks_)
    if (!k.ok && !k.either)
      rt.push_back(&k);
  if (!rt.empty()) {
    c_.expect = Expect::Throw;
    c_.feature = rt[0]->reason + "-rt";
    for (const Check *k : rt)
      if (std::find(c_.error_types.begin(), c_.error_types.end(), k->type) == c_.error_types.end())
        c_.error_types.push_back(k->type);
    c_.error_op = rt.size() == 1 ? rt[0]->op : "";
    // A huge size the rules leave open may be refused before the run-time checks run.
    for (const Check &k : checks_)
      if (k.either && k.alloc) {
        c_.open_alloc = true;
        c_.error_types.clear();
        c_.error_op.clear();
      }
    return;
  }
  for (const Check &k : checks_)
    if (k.either) {
      c_.expect = Expect::ValuesOrThrow;
      c_.feature = k.reason + (any_rt ? "-rt" : "");
      return;
    }
  c_.expect = Expect::Values;
  c_.feature = any_rt ? "ok-rt" : "ok";
}

// ---- prop: a property-suite program, maybe with one hostile parameter ------------------------

void Gen::prop_case() {
  c_.kind = "prop";
  prop::Program p = prop::generate(case_seed(c_.seed, c_.index) >> 1, {.min_ops = 1, .max_ops = 5});
  // One mutation: a hostile parameter of one node (or none).
  std::vector<size_t> ops;
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (p.nodes[k].op != prop::Op::Input)
      ops.push_back(k);
  std::string what = "ok";
  std::string err_type, err_op;
  bool reevaluate = false, either = false;
  size_t at = ops.empty() ? 0 : pick(ops);
  prop::Node &n = p.nodes[at];
  const auto rank = static_cast<int64_t>(n.shape.size());
  if (!ops.empty() && coin(0.6)) {
    const int m = static_cast<int>(irand(0, 5));
    using prop::Op;
    if (m == 0 && !n.tile.empty()) { // a vec tile entry: huge (legal) or not positive
      const auto d = static_cast<size_t>(irand(0, static_cast<int64_t>(n.tile.size()) - 1));
      // Huge but legal: tile.h allows each dim up to 2^62 (kMaxExtent).
      n.tile[d] = coin(0.8) ? pick<int64_t>({int64_t{1} << 40, pto::kMaxExtent, pto::kMaxExtent - 1,
                                             int64_t{1} << 31})
                            : pick<int64_t>({0, -1, kMin});
      if (n.tile[d] > 0)
        what = "tile-huge";
      else {
        what = "tile-nonpositive";
        err_type = "TileShapeError";
        err_op = "set_vec_tile_shapes";
      }
    } else if (m == 1 && !p.outputs().empty()) { // the output assemble's tile
      auto &o = p.nodes[static_cast<size_t>(p.outputs().back())];
      o.out_tile[static_cast<size_t>(irand(0, static_cast<int64_t>(o.out_tile.size()) - 1))] =
          pick<int64_t>({int64_t{1} << 40, pto::kMaxExtent, int64_t{1} << 33});
      what = "out-tile-huge";
    } else if (n.op == Op::Matmul) { // cube tiles: huge or zero
      n.cube[static_cast<size_t>(irand(0, 5))] =
          coin(0.7) ? pick<int64_t>({int64_t{1} << 40, kMax, int64_t{1} << 31})
                    : pick<int64_t>({0, -1});
      if (n.cube[0] > 0 && n.cube[1] > 0 && n.cube[2] > 0 && n.cube[3] > 0 && n.cube[4] > 0 &&
          n.cube[5] > 0) {
        what = "cube-huge";
        either = true; // the L1 multiple / 16 rules may refuse it
      } else {
        what = "cube-nonpositive";
        err_type = "TileShapeError";
        err_op = "set_cube_tile_shapes";
      }
    } else if (n.op == Op::Tril || n.op == Op::Triu) {
      n.diag = pick<int64_t>({kMax, kMin, int64_t{1} << 40, -(int64_t{1} << 40), kMin + 1});
      what = "diag-huge";
      reevaluate = true;
    } else if (n.op == Op::View) {
      const auto d = static_cast<size_t>(irand(0, rank - 1));
      const int64_t dim = p.nodes[static_cast<size_t>(n.args[0].node)].shape[d];
      if (coin(0.5)) {
        n.ints2[d] = pick<int64_t>({-1, dim - n.ints[d] + 1, kMax, kMin, int64_t{1} << 40,
                                    -(int64_t{1} << 62), kMax - n.ints[d] + 1});
        what = "view-outside";
      } else {
        n.ints[d] = pick<int64_t>({0, -1, dim + 1, kMax, int64_t{1} << 40});
        what = "view-size";
      }
      err_type = "ShapeError";
      err_op = "view";
    } else if (n.op == Op::Reshape) {
      const int64_t total = prop::detail::numel(n.shape);
      n.ints = pick<Shape>({{total, int64_t{1} << 32, int64_t{1} << 32},
                            {-1, -1},
                            {total, 0},
                            {-total, -1},
                            {total + 1},
                            {int64_t{1} << 62, 4, total},
                            {kMax, kMax}});
      what = "reshape-bad";
      err_type = "ShapeError"; // or TileShapeError: the target rank may pass the tile's
      err_op = "reshape";
    } else if (n.op == Op::Tile) {
      n.ints[static_cast<size_t>(irand(0, static_cast<int64_t>(n.ints.size()) - 1))] =
          pick<int64_t>({0, -1, int64_t{1} << 62, kMax, -(int64_t{1} << 40)});
      what = "tile-reps-bad";
      err_type = "ShapeError";
      err_op = "tile";
    } else if (n.op == Op::Pad) {
      n.ints[static_cast<size_t>(irand(0, static_cast<int64_t>(n.ints.size()) - 1))] =
          pick<int64_t>({-1, kMax, int64_t{1} << 62, kMin});
      what = "pad-bad";
      err_type = "ShapeError";
      err_op = "pad";
    } else if (n.op == Op::Expand) {
      n.ints[static_cast<size_t>(irand(0, static_cast<int64_t>(n.ints.size()) - 1))] =
          pick<int64_t>({-2, kMin, -(int64_t{1} << 40)});
      what = "expand-bad";
      err_type = "ShapeError";
      err_op = "expand";
    } else if (n.op == Op::Split) {
      n.ints = pick<Shape>({{0}, {-1}, {kMax, kMin}, {-3, 1}, {kMin}});
      what = "split-bad";
      err_type = "ShapeError";
      err_op = "split";
    } else if (n.op == Op::Full) {
      n.shape[static_cast<size_t>(irand(0, rank - 1))] =
          // 2^62 + 1: past the size bound (2^62 bytes, size_math.h) for every dtype, bool too.
          pick<int64_t>({-1, kMin, pto::kMaxExtent + 1, kMax});
      what = "full-shape-bad";
      err_type = "ShapeError";
      err_op = "full";
    } else if (!n.axes.empty() && n.op != Op::Squeeze) {
      n.axes[static_cast<size_t>(irand(0, static_cast<int64_t>(n.axes.size()) - 1))] =
          pick<int>({std::numeric_limits<int>::max(), std::numeric_limits<int>::min(), 9, -9});
      what = "axis-bad";
      err_type = "ShapeError";
      err_op = prop::name(n.op);
    }
  }
  // DYNAMIC input dims now and then (unmutated programs only): ops that need static dims may
  // refuse; results must still be the model's.
  const bool dynamic = what == "ok" && coin(0.25);
  if (dynamic)
    for (int k : p.inputs()) {
      pto::TensorSpec s;
      for (size_t d = 0; d < p.nodes[static_cast<size_t>(k)].shape.size(); ++d)
        s.dims.push_back(coin(0.5) ? pto::DYNAMIC : pto::STATIC);
      c_.specs.push_back(s);
    }
  if (reevaluate)
    for (size_t k = at; k < p.nodes.size(); ++k)
      if (p.nodes[k].op != prop::Op::Input && !prop::evaluate(p, k, p.vals[k])) {
        what = "diag-huge-unevaluable";
        either = true;
      }
  c_.feature = what + (dynamic ? "-dynamic" : "");
  c_.args.resize(1);
  c_.want.resize(1);
  for (int k : p.inputs()) {
    c_.args[0].push_back(p.vals[static_cast<size_t>(k)]);
    c_.want[0].push_back(p.vals[static_cast<size_t>(k)]);
  }
  for (int k : p.outputs()) {
    const Val &v = p.vals[static_cast<size_t>(k)];
    c_.args[0].push_back(filled(v.dt, v.shape, 1));
    c_.want[0].push_back(v);
  }
  if (!err_type.empty()) {
    c_.expect = Expect::Throw;
    c_.error_types = {err_type};
    if (what == "reshape-bad")
      c_.error_types.push_back("TileShapeError");
    c_.error_op = err_op;
  } else {
    c_.expect = either || dynamic ? Expect::ValuesOrThrow : Expect::Values;
  }
  std::istringstream listing(prop::describe(p));
  for (std::string s; std::getline(listing, s);)
    line(s);
  if (what != "ok")
    line("mutated: node %" + std::to_string(at) + " (" + what + ")");
  auto prog = std::make_shared<prop::Program>(std::move(p));
  c_.body = [prog](const std::vector<pto::Tensor> &t) {
    size_t next = 0;
    prop::trace_program(*prog, t, next);
  };
}

// ---- window: view (+ valid shape) and assemble with concrete, run-time and DYNAMIC offsets -----

void Gen::window() {
  c_.kind = "window";
  const DataType dt = dtype();
  const int64_t R = irand(1, 12), C = irand(1, 20), R2 = irand(1, 14), C2 = irand(1, 22);
  const bool dyn = coin(0.3);
  int64_t h = irand(1, R), w = irand(1, C);
  if (coin(0.06))
    (coin(0.5) ? h : w) = pick<int64_t>({0, -1, R + 1, int64_t{1} << 40, kMax});
  auto offset = [&](int64_t dim, int64_t size, int d) {
    Scal s = scal(offset_value(dim, size), 0.35);
    if (dyn && !s.rt() && coin(0.4)) { // as dim - k
      s.param = 0;
      s.dim = d;
      s.minus = static_cast<int64_t>(std::max<i128>(std::min<i128>(i128{dim} - s.v, kMax), kMin));
      s.v = dim - s.minus;
    }
    return s;
  };
  const Scal o0 = offset(R, h, 0), o1 = offset(C, w, 1);
  std::optional<std::vector<Scal>> valid;
  if (coin(0.4))
    valid = std::vector<Scal>{scal(valid_value(h), 0.4), scal(valid_value(w), 0.4)};
  const Scal a0 = scal(offset_value(R2, h), 0.3), a1 = scal(offset_value(C2, w), 0.3);
  const Shape tl = tile(2);
  const int op = static_cast<int>(irand(0, 2));
  const bool bad_at = coin(0.03);
  // Arguments: x, idx, y.
  const bool bad_dt = coin(0.04);
  const DataType ydt = bad_dt ? other_dtype(dt) : dt;
  Val x = data(dt, {R, C});
  c_.args = {{x, filled(ydt, {R2, C2}, kSentinel)}};
  c_.want = c_.args;
  if (dyn)
    c_.specs = {{{pto::DYNAMIC, pto::DYNAMIC}}};
  line("x = " + pto::short_name(dt) + " " + shape_str({R, C}) + (dyn ? " DYNAMIC" : "") +
       "; y = " + pto::short_name(ydt) + " " + shape_str({R2, C2}) + " (sentinel)");
  line("set_vec_tile_shapes" + shape_str(tl));
  line("v = view(x, " + shape_str({h, w}) + ", " + list_str({o0, o1}) +
       (valid ? ", valid " + list_str(*valid) : "") + ")" + (bad_at ? " with idx.at({8})" : ""));
  line(std::string("r = ") + (op == 0 ? "clone(v)" : op == 1 ? "v + 1" : "v * 2"));
  line("assemble(r, " + list_str({a0, a1}) + ", y)");
  // The rules, in trace order: ops.h (the common rules, view, assemble) and the window rule of
  // dsl/src/shape_rules.h. A rule is decided at trace time when every value it reads is concrete
  // (DYNAMIC dims, run-time offsets and valid sizes are not), else by the call. An offset
  // x.shape(d) - 0 is x.shape(d) itself, so the room x.shape(d) - offset is 0, a constant.
  auto room_rt = [&](const Scal &o) { return o.dim >= 0 && o.minus == 0 ? false : o.rt() || dyn; };
  check_tile(tl);
  check(!bad_at, false, "ShapeError", "", "at-index-outside");
  check(h > 0 && w > 0, false, "ShapeError", "view", "view-size");
  const Shape vshape = {h, w}, xshape = {R, C}, yshape = {R2, C2};
  // A view of [h, w] must need at most 2^62 bytes (ops.h, sizes), whatever its valid shape.
  check(bytes_of(vshape, dt) <= pto::kMaxExtent, false, "ShapeError", "view", "result-huge");
  const Scal os[2] = {o0, o1}, as[2] = {a0, a1};
  if (valid)
    for (size_t d = 0; d < 2; ++d) // each entry in [0, shape[d]]
      check(fits(0, (*valid)[d].v, vshape[d]), (*valid)[d].rt(), "ShapeError", "view", "valid-bad");
  // The view declares its valid_shape when given, else its whole shape; it must lie in x.
  i128 ext[2] = {h, w};
  for (size_t d = 0; d < 2; ++d) {
    const Scal &o = os[d];
    const bool ext_rt = valid && (*valid)[d].rt();
    if (valid)
      ext[d] = (*valid)[d].v;
    check(o.v >= 0, o.rt(), "ShapeError", "view", "view-outside");
    // Past a negative offset only the lower rule fails (it is checked first).
    check(o.v < 0 || ext[d] == 0 || i128{o.v} + ext[d] <= xshape[d], room_rt(o) || ext_rt,
          "ShapeError", "view", "view-outside");
  }
  check_size(bytes_of(vshape, dt) <= kBigBytes, "result-large");
  check(!bad_dt, false, "DTypeError", "assemble", "dtype-mismatch");
  // assemble writes r's valid region: the view's valid_shape, else the view's inferred valid
  // shape min(max(x.shape - offset, 0), shape) (run-time when x is DYNAMIC or the offset is).
  bool any_rt = false;
  for (size_t d = 0; d < 2; ++d) {
    const Scal &a = as[d], &o = os[d];
    bool ext_rt = valid ? (*valid)[d].rt() : room_rt(o);
    if (!valid)
      ext[d] = std::min<i128>(std::max<i128>(i128{xshape[d]} - o.v, 0), vshape[d]);
    check(a.v >= 0, a.rt(), "ShapeError", "assemble", "assemble-outside");
    check(a.v < 0 || ext[d] == 0 || i128{a.v} + ext[d] <= yshape[d], a.rt() || ext_rt, "ShapeError",
          "assemble", "assemble-outside");
    any_rt = any_rt || a.rt() || o.rt() || ext_rt;
  }
  resolve(any_rt || dyn);
  if (c_.expect != Expect::Throw) {
    Val &y = c_.want[0][1];
    for (int64_t i = 0; i < ext[0]; ++i)
      for (int64_t j = 0; j < ext[1]; ++j) {
        int64_t v = vget(x, (o0.v + i) * C + o1.v + j);
        vset(y, (a0.v + i) * C2 + a1.v + j, op == 0 ? v : op == 1 ? v + 1 : v * 2);
      }
  }
  // idx goes between x and y.
  add_idx_arg();
  for (auto *rows : {&c_.args, &c_.want})
    for (auto &row : *rows)
      std::rotate(row.begin() + 1, row.begin() + 2, row.end());
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    const int ip = 1;
    pto::set_vec_tile_shapes(tl);
    pto::ViewOptions vo;
    if (valid)
      vo.valid_shape =
          std::vector<pto::SymbolicScalar>{(*valid)[0].sym(t, ip), (*valid)[1].sym(t, ip)};
    auto off0 = bad_at ? t[1].at({8}) : o0.sym(t, ip);
    auto v = pto::view(t[0], {h, w}, {off0, o1.sym(t, ip)}, vo);
    auto r = op == 0 ? pto::clone(v) : op == 1 ? pto::add(v, 1) : pto::mul(v, 2);
    pto::assemble(r, {a0.sym(t, ip), a1.sym(t, ip)}, t[2]);
  };
}

// ---- valid: full / reshape with a valid shape, and creation with hostile shapes ---------------

void Gen::valid() {
  c_.kind = "valid";
  DataType dt = dtype();
  const int64_t R = irand(1, 9), C = irand(1, 17);
  const int mode = static_cast<int>(irand(0, 2)); // 0 full, 1 reshape, 2 creation shapes
  const Shape tl = tile(2);
  const int64_t value = irand(-20, 20) * (dt == pto::DT_UINT8 ? 0 : 1);
  c_.args.resize(1);
  c_.want.resize(1);
  check_tile(tl);
  line("set_vec_tile_shapes" + shape_str(tl));
  if (mode < 2) {
    const Scal v0 = scal(valid_value(R), 0.4), v1 = scal(valid_value(C), 0.4);
    Val x = data(dt, {C, R});
    if (mode == 1) {
      c_.args[0].push_back(x);
      c_.want[0].push_back(x);
      line("x = " + pto::short_name(dt) + " " + shape_str({C, R}));
    }
    c_.args[0].push_back(filled(dt, {R, C}, kSentinel));
    c_.want[0].push_back(c_.args[0].back());
    const std::string op = mode == 0 ? "full" : "reshape";
    line("t = " +
         (mode == 0 ? "full(" + shape_str({R, C}) + ", " + std::to_string(value) + ", " +
                          pto::short_name(dt)
                    : std::string("reshape(x, ") + shape_str({R, C})) +
         ", valid " + list_str({v0, v1}) + "); assemble(t, {0, 0}, y " + shape_str({R, C}) + ")");
    check(fits(0, v0.v, R), v0.rt(), "ShapeError", op, "valid-bad");
    check(fits(0, v1.v, C), v1.rt(), "ShapeError", op, "valid-bad");
    resolve(v0.rt() || v1.rt());
    if (c_.expect != Expect::Throw) {
      Val &y = c_.want[0].back();
      for (int64_t i = 0; i < v0.v; ++i)
        for (int64_t j = 0; j < v1.v; ++j)
          vset(y, i * C + j, mode == 0 ? value : vget(x, i * C + j));
    }
    add_idx_arg();
    const int ip = static_cast<int>(c_.args[0].size()) - 1;
    c_.body = [=](const std::vector<pto::Tensor> &t) {
      pto::set_vec_tile_shapes(tl);
      const std::vector<pto::SymbolicScalar> vs{v0.sym(t, ip), v1.sym(t, ip)};
      auto r = mode == 0 ? pto::full({R, C}, static_cast<double>(value), dt, {.valid_shape = vs})
                         : pto::reshape(t[0], {R, C}, {.valid_shape = vs});
      pto::assemble(r, {0, 0}, t[static_cast<size_t>(ip - 1)]);
    };
    return;
  }
  // Creation with a hostile shape; a [1, 1] corner of it is assembled into y.
  const int which = static_cast<int>(irand(0, 2)); // full, zeros, ones
  const char *op = which == 0 ? "full" : which == 1 ? "zeros" : "ones";
  if (which == 2 && dt == pto::DT_UINT8)
    dt = pto::DT_INT32;
  Shape s = {irand(1, 4), irand(1, 4)};
  s[static_cast<size_t>(irand(0, 1))] =
      pick<int64_t>({0, -1, int64_t{1} << 40, kMax, int64_t{1} << 31, int64_t{1} << 20, kMin});
  if (coin(0.3))
    s = {int64_t{1} << 40, int64_t{1} << 40};
  c_.args[0].push_back(filled(dt, {1, 1}, kSentinel));
  c_.want[0].push_back(filled(dt, {1, 1}, which == 0 ? value : which == 1 ? 0 : 1));
  line(std::string("t = ") + op + "(" + shape_str(s) +
       (which == 0 ? ", " + std::to_string(value) : "") + ", " + pto::short_name(dt) +
       "); assemble(view(t, {1, 1}, {0, 0}), {0, 0}, y [1, 1])");
  const i128 b = bytes_of(s, dt);
  check(s[0] > 0 && s[1] > 0, false, "ShapeError", op, "shape-nonpositive");
  check(b <= kMax, false, "ShapeError", op, "shape-overflow");
  check_size(b <= kBigBytes, "shape-huge");
  resolve(false);
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    pto::set_vec_tile_shapes(tl);
    const std::vector<pto::SymbolicScalar> ss(s.begin(), s.end());
    auto r = which == 0   ? pto::full(ss, static_cast<double>(value), dt)
             : which == 1 ? pto::zeros(ss, dt)
                          : pto::ones(ss, dt);
    pto::assemble(pto::view(r, {1, 1}, {0, 0}), {0, 0}, t[0]);
  };
}

// ---- shape: tile / pad / expand with hostile sizes, a corner assembled -----------------------

void Gen::shape_ops() {
  c_.kind = "shape";
  const DataType dt = dtype();
  const int64_t R = irand(1, 6), C = irand(1, 6);
  const int which = static_cast<int>(irand(0, 2)); // tile, pad, expand
  const Shape tl = tile(2);
  auto amount = [&](int64_t typical_hi) {
    return coin(0.6) ? irand(which == 0 ? 1 : 0, typical_hi)
                     : pick<int64_t>({0, -1, int64_t{1} << 20, int64_t{1} << 31, int64_t{1} << 40,
                                      int64_t{1} << 62, kMax, kMin});
  };
  Shape a = {amount(3), amount(3)};
  Val x = data(dt, {which == 2 ? 1 : R, C});
  c_.args = {{x, filled(dt, {R, C}, kSentinel)}};
  c_.want = c_.args;
  const char *op = which == 0 ? "tile" : which == 1 ? "pad" : "expand";
  Shape out;
  line("x = " + pto::short_name(dt) + " " + shape_str({which == 2 ? 1 : R, C}));
  line("set_vec_tile_shapes" + shape_str(tl));
  check_tile(tl);
  if (which == 0) {
    line("t = tile(x, " + shape_str(a) + ")");
    check(a[0] >= 1 && a[1] >= 1, false, "ShapeError", op, "reps-bad");
    out = {static_cast<int64_t>(std::min<i128>(i128{a[0]} * R, kMax)),
           static_cast<int64_t>(std::min<i128>(i128{a[1]} * C, kMax))};
    check(i128{a[0]} * R <= kMax && i128{a[1]} * C <= kMax, false, "ShapeError", op,
          "shape-overflow");
  } else if (which == 1) {
    line("t = pad(x, {0, " + std::to_string(a[0]) + ", 0, " + std::to_string(a[1]) + "})");
    check(a[0] >= 0 && a[1] >= 0, false, "ShapeError", op, "pad-negative");
    out = {static_cast<int64_t>(std::min<i128>(i128{a[1]} + R, kMax)),
           static_cast<int64_t>(std::min<i128>(i128{a[0]} + C, kMax))};
    check(i128{a[1]} + R <= kMax && i128{a[0]} + C <= kMax, false, "ShapeError", op,
          "shape-overflow");
  } else {
    line("t = expand(x, {" + std::to_string(a[0]) + ", " + std::to_string(C) + "})");
    check(a[0] >= 1 || a[0] == -1, false, "ShapeError", op, "expand-bad");
    out = {a[0] == -1 ? 1 : a[0], C};
  }
  const i128 b = bytes_of(out, dt);
  check(b >= 0 && b <= kMax, false, "ShapeError", op, "shape-overflow");
  line("assemble(view(t, " + shape_str({R, C}) + ", {0, 0}), {0, 0}, y)");
  check(out[0] >= R && out[1] >= C, false, "ShapeError", "view", "view-outside");
  check_size(b <= kBigBytes, "shape-huge");
  resolve(false);
  if (c_.expect != Expect::Throw)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j)
        vset(c_.want[0][1], i * C + j, vget(x, which == 2 ? j : i * C + j));
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    pto::set_vec_tile_shapes(tl);
    auto r = which == 0   ? pto::tile(t[0], a)
             : which == 1 ? pto::pad(t[0], {0, a[0], 0, a[1]})
                          : pto::expand(t[0], {a[0], C});
    pto::assemble(pto::view(r, {R, C}, {0, 0}), {0, 0}, t[1]);
  };
}

// ---- loop: extreme bounds and steps, counted through is_loop_begin/end and a probe ------------

void Gen::loop() {
  c_.kind = "loop";
  const int64_t base =
      pick<int64_t>({0, 0, kMax, kMin, int64_t{1} << 62, -(int64_t{1} << 62), 1000, -1000,
                     std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()});
  auto clamp = [](i128 v) {
    return static_cast<int64_t>(std::max<i128>(std::min<i128>(v, kMax), kMin));
  };
  const int64_t start = clamp(i128{base} + irand(-40, 40));
  int64_t stop = coin(0.15) ? pick<int64_t>({kMax, kMin, 0}) : clamp(i128{start} + irand(-5, 60));
  int64_t step = coin(0.7) ? irand(1, 9)
                           : pick<int64_t>({kMax, int64_t{1} << 62, 0, -1, kMin, int64_t{1} << 32});
  const i128 span = i128{stop} - start;
  auto trips_of = [&](int64_t st) -> i128 {
    if (st <= 0 || span <= 0)
      return 0;
    return (span + st - 1) / st;
  };
  if (trips_of(step) > 200) { // keep the run short: ~irand(1, 200) trips
    i128 st = (span + irand(1, 200) - 1) / irand(1, 200);
    step = clamp(std::max<i128>(st, 1));
    if (trips_of(step) > 200)
      step = kMax;
  }
  const i128 trips = trips_of(step);
  const Scal s0 = scal(start, 0.3), s1 = scal(stop, 0.3), s2 = scal(step, 0.2);
  // The probe: one iteration's index (or a value no iteration takes).
  int64_t probe = start;
  bool probe_hit = false;
  if (trips > 0 && coin(0.8)) {
    probe = clamp(i128{start} + i128{step} * irand(0, static_cast<int64_t>(trips) - 1));
    probe_hit = true;
  } else if (step > 1) {
    probe = clamp(i128{start} + 1);
    probe_hit = false;
  }
  if (!probe_hit && trips > 0 && probe == start)
    probe_hit = true;
  const bool unroll = coin(0.15);
  const int64_t factor = coin(0.8) ? irand(2, 4) : pick<int64_t>({0, -1, kMax});
  c_.args = {{filled(pto::DT_INT64, {1, 4}, 0)}};
  c_.want = c_.args;
  line("y = int64 [1, 4] zeros");
  line(std::string(unroll ? "for ([i, k] : loop_unroll(" : "for (i : loop(") + s0.str() + ", " +
       s1.str() + ", " + s2.str() + (unroll ? ", {" + std::to_string(factor) + "}" : "") + "))");
  line("  y[0, 0] += k; if (cond(is_loop_begin(i))) y[0, 1] += 1; if (cond(is_loop_end(i))) "
       "y[0, 2] += 1; if (cond(i == " +
       std::to_string(probe) + ")) y[0, 3] += 1");
  line("trips (exact): " + i128_str(trips));
  if (unroll)
    check(factor > 0, false, "ArgumentError", "loop_unroll", "unroll-factor-bad");
  check(step > 0 || s2.rt(), false, "SymbolicError", unroll ? "loop_unroll" : "loop",
        "step-nonpositive");
  // A run-time step <= 0 is a RuntimeError when the loop starts (loop_unroll's sub-loop may name
  // the loop or the division by step * k).
  check(step > 0 || !s2.rt(), true, "RuntimeError", unroll ? "" : "loop", "step-nonpositive");
  // Feature: where the index would wrap past INT64_MAX with a naive `i += step`.
  const bool wraps = trips > 0 && i128{start} + trips * i128{step} > kMax;
  resolve(s0.rt() || s1.rt() || s2.rt());
  if (c_.feature.rfind("ok", 0) == 0 && wraps)
    c_.feature = "wrap" + c_.feature.substr(2);
  // loop_unroll computes stop - start: a span past int64 is its own class.
  if (unroll && c_.feature.rfind("ok", 0) == 0 && (span > kMax || span < kMin))
    c_.feature = "span-overflow" + c_.feature.substr(2);
  if (unroll && c_.expect != Expect::Throw) // is_loop_begin/end per sub-loop: do not predict them
    c_.expect = Expect::ValuesOrThrow, c_.feature += "-unroll";
  if (c_.expect != Expect::Throw) {
    Val &y = c_.want[0][0];
    y.i[0] = static_cast<int64_t>(trips);
    y.i[1] = trips > 0;
    y.i[2] = trips > 0;
    y.i[3] = probe_hit;
    if (unroll) // only the count is predicted
      y.err[1] = y.err[2] = y.err[3] = std::numeric_limits<double>::infinity();
  }
  add_idx_arg();
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    const int ip = 1;
    const pto::Tensor &y = t[0];
    pto::set_vec_tile_shapes(1, 4);
    auto bump = [&](int col, int64_t by) {
      pto::assemble(pto::add(pto::view(y, {1, 1}, {0, col}), by), {0, col}, y);
    };
    auto body = [&](const pto::SymbolicScalar &i, int64_t k) {
      bump(0, k);
      if (pto::cond(pto::is_loop_begin(i)))
        bump(1, 1);
      if (pto::cond(pto::is_loop_end(i)))
        bump(2, 1);
      if (pto::cond(i == probe))
        bump(3, 1);
    };
    if (unroll) {
      for (auto [i, k] : pto::loop_unroll(s0.sym(t, ip), s1.sym(t, ip), s2.sym(t, ip), {factor}))
        body(i, k);
    } else {
      for (auto i : pto::loop(s0.sym(t, ip), s1.sym(t, ip), s2.sym(t, ip)))
        body(i, 1);
    }
  };
}

// ---- shmem: a ring put / signal / wait / get through a hostile window -------------------------

void Gen::shmem() {
  c_.kind = "shmem";
  const int n = static_cast<int>(irand(1, 8));
  c_.n_pes = n;
  c_.deadlock_timeout_ms = 400;
  DataType dt = pick<DataType>({pto::DT_FP32, pto::DT_INT32, pto::DT_FP16, pto::DT_INT64,
                                pto::DT_BF16, pto::DT_INT8, pto::DT_DOUBLE});
  const bool bad_dt = coin(0.03);
  if (bad_dt)
    dt = pick<DataType>({pto::DT_BOOL, pto::DT_UINT8});
  Shape bs = {irand(1, 10), irand(1, 20)};
  const bool bad_shape = coin(0.06);
  if (bad_shape)
    bs[static_cast<size_t>(irand(0, 1))] =
        pick<int64_t>({0, -1, int64_t{1} << 40, kMax, int64_t{1} << 31});
  const int nn = coin(0.04) ? pick<int>({n + 1, 0, -1, n - 1}) : n;
  const std::string group =
      coin(0.03) ? pick<std::string>({"nope", "", std::string(200, 'g')}) : "world";
  // The window: the whole buffer, or a shmem_view of it.
  const bool use_view = coin(0.6);
  int64_t h = bs[0], w = bs[1];
  Scal o0, o1;
  std::optional<std::vector<Scal>> valid;
  if (use_view) {
    h = std::max<int64_t>(1, irand(1, std::max<int64_t>(1, std::min<int64_t>(bs[0], 10))));
    w = std::max<int64_t>(1, irand(1, std::max<int64_t>(1, std::min<int64_t>(bs[1], 20))));
    if (coin(0.05))
      h = pick<int64_t>({0, -1, bs[0] + 1});
    o0 = scal(offset_value(bs[0], h), 0.3);
    o1 = scal(offset_value(bs[1], w), 0.3);
    if (coin(0.35))
      valid = std::vector<Scal>{scal(valid_value(h), 0.4), scal(valid_value(w), 0.4)};
  }
  const int64_t vh = valid ? (*valid)[0].v : h, vw = valid ? (*valid)[1].v : w;
  // The put: x [R, C] at offsets (p0, p1) of the window on PE dst.
  const int64_t R = std::max<int64_t>(1, irand(1, std::max<int64_t>(1, std::min<int64_t>(h, 10))));
  const int64_t C = std::max<int64_t>(1, irand(1, std::max<int64_t>(1, std::min<int64_t>(w, 20))));
  const Scal p0 = scal(offset_value(h, R), 0.3), p1 = scal(offset_value(w, C), 0.3);
  // dst = (me + shift) % n, or a hostile PE number.
  const bool bad_pe = coin(0.06);
  const Scal dst_bad = scal(pick<int64_t>({n, -1, kMax, kMin, n + 7}), 0.6);
  const bool deadlock = coin(0.05);
  const Shape tl = tile(2);
  // Args: x, y [h, w].
  c_.args.resize(static_cast<size_t>(n));
  c_.want.resize(static_cast<size_t>(n));
  std::vector<Val> xs;
  const bool y_ok = h > 0 && w > 0 && h <= 64 && w <= 64;
  const Shape ys = y_ok ? Shape{h, w} : Shape{1, 1};
  const bool bad_put_dt = !bad_dt && coin(0.04);
  const DataType xdt = bad_put_dt ? other_dtype(dt) : dt;
  for (int p = 0; p < n; ++p) {
    xs.push_back(data(xdt, {R, C}));
    c_.args[static_cast<size_t>(p)] = {xs.back(), filled(dt, ys, kSentinel)};
  }
  c_.want = c_.args;
  line(std::to_string(n) + " PEs; x = " + pto::short_name(xdt) + " " + shape_str({R, C}) +
       " per PE; y = " + shape_str(ys) + " (sentinel)");
  line("set_vec_tile_shapes" + shape_str(tl));
  line("buf = create_shmem_tensor(\"" + (group.size() > 20 ? group.substr(0, 8) + "..." : group) +
       "\", " + std::to_string(nn) + ", " + pto::short_name(dt) + ", " + shape_str(bs) + ")");
  if (use_view)
    line("win = shmem_view(buf, " + shape_str({h, w}) + ", " + list_str({o0, o1}) +
         (valid ? ", valid " + list_str(*valid) : "") + ")");
  line(std::string("put = shmem_put(x, ") + list_str({p0, p1}) + ", win, " +
       (bad_pe ? dst_bad.str() : "(me + 1) % n") + ")");
  line(std::string("signal(buf, dst, 1, dst); wait_until(buf, me, ") + (deadlock ? "2" : "1") +
       ", clear); assemble(shmem_get(win, me), {0, 0}, y)");
  // The rules, in trace order (distributed.h; the window rule of dsl/src/shape_rules.h with
  // DistributedError; run-time values are checked by the op that takes them).
  check_tile(tl);
  check(group == "world", false, "DistributedError", "create_shmem_tensor", "group-bad");
  check(nn == n, false, "DistributedError", "create_shmem_tensor", "n-pes-bad");
  check(!bad_dt, false, "DTypeError", "create_shmem_tensor", "dtype-bad");
  // Dims > 0, at most 2^62 bytes, and with its signals within the 2^40-byte symmetric heap
  // (kMaxSymmetricHeapBytes; data and signal arrays each rounded up to 512 bytes, the signals
  // n PEs x the most tiles a signal or wait on it uses x 32 bytes: pto/ir/program.h).
  const i128 bytes = bytes_of(bs, dt);
  auto heap_fits = [&](i128 tiles) {
    auto up = [](i128 b) { return (b + 511) / 512 * 512; };
    return up(bytes) + up(i128{n} * 32 * tiles) <= i128{pto::kMaxSymmetricHeapBytes};
  };
  check(bs[0] > 0 && bs[1] > 0 && heap_fits(1), false, "ShapeError", "create_shmem_tensor",
        "shape-bad");
  check_size(bytes * n <= kBigBytes, "shape-huge");
  const Scal os[2] = {o0, o1}, ps[2] = {p0, p1};
  const Shape wshape = {h, w}, xshape = {R, C};
  if (use_view) {
    check(h > 0 && w > 0, false, "ShapeError", "shmem_view", "view-size");
    // The whole view (a valid_shape does not narrow it) must lie in the data.
    for (size_t d = 0; d < 2; ++d) {
      const Scal &o = os[d];
      check(o.v >= 0, o.rt(), "DistributedError", "shmem_view", "view-outside");
      check(o.v < 0 || i128{o.v} + wshape[d] <= bs[d], o.rt(), "DistributedError", "shmem_view",
            "view-outside");
    }
    if (valid) {
      check(fits(0, vh, h), (*valid)[0].rt(), "ShapeError", "shmem_view", "valid-bad");
      check(fits(0, vw, w), (*valid)[1].rt(), "ShapeError", "shmem_view", "valid-bad");
    }
  }
  check(!bad_put_dt, false, "DTypeError", "shmem_put", "dtype-mismatch");
  // dst_pe, then x's whole shape at the put's offsets in the window (the view, or the data).
  if (bad_pe)
    check(false, dst_bad.rt(), "DistributedError", "shmem_put", "dst-pe-bad");
  for (size_t d = 0; d < 2; ++d) {
    const Scal &q = ps[d];
    check(q.v >= 0, q.rt(), "DistributedError", "shmem_put", "put-outside");
    check(q.v < 0 || i128{q.v} + xshape[d] <= wshape[d], q.rt(), "DistributedError", "shmem_put",
          "put-outside");
  }
  // The signal on the whole buffer: one slot per vec tile of it, within the heap too.
  if (bs[0] > 0 && bs[1] > 0 && tl[0] > 0 && tl[1] > 0)
    check(heap_fits(((i128{bs[0]} + tl[0] - 1) / tl[0]) * ((i128{bs[1]} + tl[1] - 1) / tl[1])),
          false, "ShapeError", "shmem_signal", "signal-heap");
  check(y_ok, false, "", "", "window-large", /*either=*/true);
  // The wait that cannot complete: a DeadlockError, unless an earlier rule already fails.
  bool all_ok = true;
  for (const Check &k : checks_)
    all_ok = all_ok && (k.ok || k.either);
  if (deadlock && all_ok)
    check(false, true, "DeadlockError", "shmem_wait_until", "deadlock");
  const bool any_rt =
      o0.rt() || o1.rt() || p0.rt() || p1.rt() || (valid && ((*valid)[0].rt() || (*valid)[1].rt()));
  resolve(any_rt);
  if (std::max(tl[0], tl[1]) > (int64_t{1} << 31)) // signal slots are counted per vec tile
    c_.feature += "-hugetile";
  if (c_.expect != Expect::Throw && y_ok)
    for (int p = 0; p < n; ++p) {
      const Val &src = xs[static_cast<size_t>((p + n - 1) % n)];
      Val &y = c_.want[static_cast<size_t>(p)][1];
      for (int64_t i = 0; i < vh; ++i)
        for (int64_t j = 0; j < vw; ++j) {
          const int64_t r = i - p0.v, cc = j - p1.v;
          vset(y, i * w + j, r >= 0 && r < R && cc >= 0 && cc < C ? vget(src, r * C + cc) : 0);
        }
    }
  add_idx_arg();
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    const int ip = 2;
    pto::set_vec_tile_shapes(tl);
    auto buf = dist::create_shmem_tensor(group, nn, dt, bs);
    auto win = buf;
    if (use_view) {
      dist::ShmemViewOptions vo;
      if (valid)
        vo.valid_shape =
            std::vector<pto::SymbolicScalar>{(*valid)[0].sym(t, ip), (*valid)[1].sym(t, ip)};
      win = dist::shmem_view(buf, {h, w}, {o0.sym(t, ip), o1.sym(t, ip)}, vo);
    }
    auto me = dist::my_symbolic_pe("world");
    pto::SymbolicScalar dst = bad_pe ? dst_bad.sym(t, ip) : (me + 1) % n;
    auto put = dist::shmem_put(t[0], {p0.sym(t, ip), p1.sym(t, ip)}, win, dst);
    // Signals on the whole buffer: slot geometry (view shape dividing the data, tile-aligned
    // offsets) is not what this template tests.
    auto sig = dist::shmem_signal(buf, dst, 1, dst, {.pred = {put}});
    auto ready =
        dist::shmem_wait_until(buf, me, deadlock ? 2 : 1, {.clear_signal = true, .pred = {sig}});
    pto::assemble(dist::shmem_get(win, me, {.pred = {ready}}), {0, 0}, t[1]);
  };
}

// ---- collective: allreduce / allgather / reduce_scatter / broadcast / all_to_all -------------

void Gen::collective() {
  c_.kind = "collective";
  const int n = static_cast<int>(irand(1, 8));
  c_.n_pes = n;
  c_.deadlock_timeout_ms = 5000;
  const DataType dt = pick<DataType>({pto::DT_FP32, pto::DT_INT32, pto::DT_FP16, pto::DT_BF16,
                                      pto::DT_INT64, pto::DT_INT8, pto::DT_INT16, pto::DT_DOUBLE});
  const int which = static_cast<int>(irand(0, 4));
  const auto red = pick<dist::Reduction>(
      {dist::Reduction::SUM, dist::Reduction::MAX, dist::Reduction::MIN, dist::Reduction::PROD});
  const auto algo = pick<dist::AllreduceAlgorithm>({dist::AllreduceAlgorithm::AUTO,
                                                    dist::AllreduceAlgorithm::ONE_SHOT,
                                                    dist::AllreduceAlgorithm::TWO_SHOT});
  int64_t R = irand(1, 9), C = irand(1, 20);
  // all_to_all: per-peer counts (or equal blocks), maybe hostile.
  std::vector<std::vector<int64_t>> counts;
  const bool equal = which == 4 && coin(0.3);
  bool bad_counts = false;
  if (which == 4 && !equal) {
    counts.assign(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(n), 0));
    for (auto &row : counts)
      for (auto &v : row)
        v = irand(0, 3);
    if (coin(0.1)) {
      bad_counts = true;
      if (coin(0.5))
        counts[static_cast<size_t>(irand(0, n - 1))][static_cast<size_t>(irand(0, n - 1))] =
            pick<int64_t>({-1, kMax, kMin, int64_t{1} << 40});
      else
        counts.resize(static_cast<size_t>(n) + 1, std::vector<int64_t>(static_cast<size_t>(n), 1));
    }
    int64_t need = 1;
    if (!bad_counts)
      for (auto &row : counts) {
        int64_t s = 0;
        for (auto v : row)
          s += v;
        need = std::max(need, s);
      }
    R = need;
  }
  if (equal)
    R = n * irand(1, 3);
  const bool use_valid = which <= 1 && coin(0.4);
  const Scal v0 = scal(use_valid ? valid_value(R) : R, 0.4),
             v1 = scal(use_valid ? valid_value(C) : C, 0.4);
  const int root = coin(0.92) ? static_cast<int>(irand(0, n - 1)) : pick<int>({-1, n, 1 << 30});
  const std::string group = coin(0.03) ? "nope" : "world";
  const Shape tl = tile(2);
  auto reduce = [&](int64_t a, int64_t b) -> int64_t {
    switch (red) {
    case dist::Reduction::SUM:
      return wrap(dt, a + b);
    case dist::Reduction::MAX:
      return std::max(a, b);
    case dist::Reduction::MIN:
      return std::min(a, b);
    case dist::Reduction::PROD:
      return wrap(dt, a * b);
    }
    return 0;
  };
  std::vector<Val> xs;
  for (int p = 0; p < n; ++p)
    xs.push_back(red == dist::Reduction::PROD && which <= 2 ? data(dt, {R, C}, -1, 2)
                                                            : data(dt, {R, C}, -8, 8));
  // Result shape and per-PE expected rows.
  const int64_t B = (R + n - 1) / n;
  std::vector<int64_t> recv(static_cast<size_t>(n), 0);
  int64_t max_recv = 1;
  if (which == 4 && !bad_counts && !equal) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i)
        recv[static_cast<size_t>(j)] += counts[static_cast<size_t>(i)][static_cast<size_t>(j)];
      max_recv = std::max(max_recv, recv[static_cast<size_t>(j)]);
    }
  }
  const Shape out = which == 1   ? Shape{n * R, C}
                    : which == 2 ? Shape{B, C}
                    : which == 4 ? Shape{equal ? R : max_recv, C}
                                 : Shape{R, C};
  c_.args.resize(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p)
    c_.args[static_cast<size_t>(p)] = {xs[static_cast<size_t>(p)], filled(dt, out, kSentinel)};
  c_.want = c_.args;
  static const char *const names[] = {"allreduce", "allgather", "reduce_scatter", "broadcast",
                                      "all_to_all"};
  line(std::to_string(n) + " PEs; x = " + pto::short_name(dt) + " " + shape_str({R, C}) +
       "; y = " + shape_str(out) + " (sentinel)");
  line("set_vec_tile_shapes" + shape_str(tl));
  if (use_valid)
    line("xin = view(x, " + shape_str({R, C}) + ", {0, 0}, valid " + list_str({v0, v1}) + ")");
  std::string call = std::string(names[which]) + "(xin";
  if (which == 0 || which == 2)
    call += std::string(", ") + dist::name(red);
  if (which == 0)
    call +=
        std::string(", algorithm ") + (algo == dist::AllreduceAlgorithm::AUTO       ? "AUTO"
                                       : algo == dist::AllreduceAlgorithm::ONE_SHOT ? "ONE_SHOT"
                                                                                    : "TWO_SHOT");
  if (which == 3)
    call += ", root " + std::to_string(root);
  if (which == 4 && !equal) {
    call += ", counts {";
    for (auto &row : counts)
      call += shape_str(row);
    call += "}";
  }
  line(call + ", group \"" + group + "\"); assemble(result, {0, 0}, y)");
  check_tile(tl);
  if (use_valid) { // the view is traced before the collective
    check(fits(0, v0.v, R), v0.rt(), "ShapeError", "view", "valid-bad");
    check(fits(0, v1.v, C), v1.rt(), "ShapeError", "view", "valid-bad");
  }
  check(group == "world", false, "DistributedError", names[which], "group-bad");
  if (which == 3)
    check(root >= 0 && root < n, false, "DistributedError", "broadcast", "root-bad");
  if (which == 4)
    check(!bad_counts, false, "DistributedError", "all_to_all", "counts-bad");
  resolve(v0.rt() || v1.rt());
  if (c_.expect == Expect::Throw && c_.feature.rfind("counts-bad", 0) == 0)
    c_.error_types = {"DistributedError", "ShapeError"};
  if (c_.expect != Expect::Throw) {
    const int64_t vr = v0.v, vc = v1.v;
    for (int p = 0; p < n; ++p) {
      Val &y = c_.want[static_cast<size_t>(p)][1];
      const Val &xp = xs[static_cast<size_t>(p)];
      if (which == 0) {
        for (int64_t i = 0; i < vr; ++i)
          for (int64_t j = 0; j < vc; ++j) {
            int64_t acc = vget(xs[0], i * C + j);
            for (int q = 1; q < n; ++q)
              acc = reduce(acc, vget(xs[static_cast<size_t>(q)], i * C + j));
            vset(y, i * C + j, acc);
          }
      } else if (which == 1) {
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < vr; ++i)
            for (int64_t j = 0; j < vc; ++j)
              vset(y, (q * vr + i) * C + j, vget(xs[static_cast<size_t>(q)], i * C + j));
      } else if (which == 2) {
        const int64_t first = p * B, rows = std::max<int64_t>(0, std::min(B, R - first));
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < C; ++j) {
            int64_t acc = vget(xs[0], (first + i) * C + j);
            for (int q = 1; q < n; ++q)
              acc = reduce(acc, vget(xs[static_cast<size_t>(q)], (first + i) * C + j));
            vset(y, i * C + j, acc);
          }
      } else if (which == 3) {
        y = xs[static_cast<size_t>(root)];
      } else if (equal) {
        const int64_t b = R / n;
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t j = 0; j < C; ++j)
              vset(y, (q * b + i) * C + j, vget(xs[static_cast<size_t>(q)], (p * b + i) * C + j));
      } else {
        int64_t row = 0;
        for (int q = 0; q < n; ++q) {
          int64_t first = 0;
          for (int k = 0; k < p; ++k)
            first += counts[static_cast<size_t>(q)][static_cast<size_t>(k)];
          for (int64_t i = 0; i < counts[static_cast<size_t>(q)][static_cast<size_t>(p)];
               ++i, ++row)
            for (int64_t j = 0; j < C; ++j)
              vset(y, row * C + j, vget(xs[static_cast<size_t>(q)], (first + i) * C + j));
        }
      }
      (void)xp;
    }
  }
  add_idx_arg();
  c_.body = [=](const std::vector<pto::Tensor> &t) {
    const int ip = 2;
    pto::set_vec_tile_shapes(tl);
    pto::Tensor xin = t[0];
    if (use_valid)
      xin = pto::view(
          t[0], {R, C}, {0, 0},
          {.valid_shape = std::vector<pto::SymbolicScalar>{v0.sym(t, ip), v1.sym(t, ip)}});
    pto::Tensor r;
    switch (which) {
    case 0:
      r = dist::allreduce(xin, red, {.group = group, .algorithm = algo});
      break;
    case 1:
      r = dist::allgather(xin, {.group = group});
      break;
    case 2:
      r = dist::reduce_scatter(xin, red, {.group = group});
      break;
    case 3:
      r = dist::broadcast(xin, root, {.group = group});
      break;
    default:
      r = equal ? dist::all_to_all(xin, {.group = group})
                : dist::all_to_all(xin, counts, {.group = group});
      break;
    }
    pto::assemble(r, {0, 0}, t[1]);
  };
}

// ---- host: HostTensor construction and element access with hostile values -------------------

void Gen::host() {
  c_.kind = "host";
  const DataType dt = dtype();
  if (coin(0.5)) {
    Shape s;
    const int64_t rank = coin(0.1) ? 9 : irand(1, 4);
    for (int64_t d = 0; d < rank; ++d)
      s.push_back(coin(0.5) ? irand(0, 5)
                            : pick<int64_t>({-1, int64_t{1} << 40, int64_t{1} << 31,
                                             int64_t{1} << 62, kMax, kMin}));
    const i128 b = bytes_of(s, dt);
    line("HostTensor(" + pto::short_name(dt) + ", " + shape_str(s) + ")");
    check(rank <= 8, false, "ShapeError", "HostTensor", "rank-bad");
    check(b >= 0, false, "ShapeError", "HostTensor", "dim-negative");
    check(b <= kMax, false, "ShapeError", "HostTensor", "shape-overflow");
    // Allocations past 2^40 bytes are refused by the host (and must be, as an error).
    check(b < (i128{1} << 40), false, "Error", "HostTensor", "huge");
    check_size(b <= kBigBytes, "large");
    resolve(false);
    if (c_.expect != Expect::Throw) { // never allocate a large tensor for real
      c_.expect = Expect::ValuesOrThrow;
      if (b > (i128{1} << 20))
        s = {1};
    }
    if (c_.feature == "huge")
      c_.error_types = {}; // any pto::Error ("out of memory")
    c_.host = [=] {
      pto::HostTensor t(dt, s);
      (void)t;
    };
    return;
  }
  const int64_t n = irand(1, 16);
  const int64_t i =
      coin(0.5) ? irand(0, n - 1) : pick<int64_t>({n, -1, kMax, kMin, int64_t{1} << 40, n + 64});
  const bool set = coin(0.5);
  line(std::string("HostTensor(") + pto::short_name(dt) + ", {" + std::to_string(n) + "})." +
       (set ? "set(" : "get(") + std::to_string(i) + (set ? ", 1)" : ")"));
  check(i >= 0 && i < n, false, "ShapeError", set ? "set" : "get",
        set ? "set-outside" : "get-outside"); // host_tensor.h: ShapeError naming the index
  resolve(false);
  if (c_.expect == Expect::Throw)
    c_.error_op.clear(); // any pto::Error naming any op
  c_.host = [=] {
    pto::HostTensor t(dt, {n});
    if (set)
      t.set(i, 1);
    else
      (void)t.get(i);
  };
}

// ---- call: kernel calls with hostile specs, zero-size and mismatched arguments ----------------

void Gen::kernel_call() {
  c_.kind = "call";
  DataType dt = pick<DataType>({pto::DT_FP32, pto::DT_INT32, pto::DT_FP16});
  Shape s = {irand(1, 6), irand(1, 9)};
  const int mode = static_cast<int>(irand(0, 4));
  Shape xs = s;
  if (mode == 0) // a zero-size dim
    xs[static_cast<size_t>(irand(0, 1))] = 0;
  Val x = data(dt, xs);
  c_.args = {{x, filled(dt, xs, kSentinel)}};
  c_.want = c_.args;
  line("x = " + pto::short_name(dt) + " " + shape_str(xs) + "; y alike (sentinel)");
  line("set_vec_tile_shapes(8, 8); assemble(x + 1, {0, 0}, y)");
  if (mode == 1) { // more specs than tensors
    c_.specs = {{}, {}, {{pto::DYNAMIC, pto::DYNAMIC}}};
    line("specs: 3 entries for 2 tensors");
    check(false, false, "ArgumentError", "", "specs-extra");
  } else if (mode == 2) { // a spec whose fixed dim or dtype the argument contradicts
    if (coin(0.5)) {
      c_.specs = {{{xs[0] + 1, pto::STATIC}}};
      line("specs: x dims {" + std::to_string(xs[0] + 1) + ", STATIC}");
    } else {
      c_.specs = {{{}, dt == pto::DT_FP32 ? pto::DT_INT32 : pto::DT_FP32}};
      line("specs: x dtype differs");
    }
    check(false, false, "ArgumentError", "", "spec-mismatch");
  } else if (mode == 3) { // a spec with nonsense dims
    c_.specs = {{{pick<int64_t>({0, -3, kMin, kMax}), pto::DYNAMIC}}};
    line("specs: x dims {" + std::to_string(c_.specs[0].dims[0]) + ", DYNAMIC}");
    const int64_t d0 = c_.specs[0].dims[0];
    check(d0 == xs[0], false, "ArgumentError", "", "spec-dims-bad");
  } else if (mode == 4) { // DYNAMIC both
    c_.specs = {{{pto::DYNAMIC, pto::DYNAMIC}}, {{pto::DYNAMIC, pto::DYNAMIC}}};
    line("specs: x, y DYNAMIC");
  }
  if (mode == 0)
    check(false, false, "", "", "zero-size", /*either=*/true);
  resolve(mode == 4);
  if (c_.expect != Expect::Throw)
    for (int64_t k = 0; k < x.numel(); ++k)
      vset(c_.want[0][1], k, vget(x, k) + 1);
  c_.body = [](const std::vector<pto::Tensor> &t) {
    pto::set_vec_tile_shapes(8, 8);
    pto::assemble(pto::add(t[0], 1), {0, 0}, t[1]);
  };
}

Case Gen::run() {
  switch (weighted({26, 16, 10, 8, 8, 12, 10, 5, 5})) {
  case 0:
    prop_case();
    break;
  case 1:
    window();
    break;
  case 2:
    valid();
    break;
  case 3:
    shape_ops();
    break;
  case 4:
    loop();
    break;
  case 5:
    shmem();
    break;
  case 6:
    collective();
    break;
  case 7:
    host();
    break;
  default:
    kernel_call();
    break;
  }
  return std::move(c_);
}

} // namespace

uint64_t case_seed(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull; // splitmix64's finalizer
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Case generate(uint64_t seed, uint64_t index) { return Gen(seed, index).run(); }

const std::vector<std::string> &kinds() {
  static const std::vector<std::string> k = {"prop",  "window",     "valid", "shape", "loop",
                                             "shmem", "collective", "host",  "call"};
  return k;
}

std::string describe(const Case &c) {
  std::ostringstream os;
  os << "case " << c.index << " of seed " << c.seed << ": " << c.klass() << ", expect ";
  switch (c.expect) {
  case Expect::Values:
    os << "values";
    break;
  case Expect::Throw:
    os << "a throw of ";
    for (size_t k = 0; k < c.error_types.size(); ++k)
      os << (k ? " or " : "") << c.error_types[k];
    if (c.error_types.empty())
      os << "any pto::Error";
    os << (c.error_op.empty() ? "" : " from " + c.error_op);
    break;
  case Expect::ValuesOrThrow:
    os << "values or a typed error";
    break;
  }
  os << "\n";
  for (const auto &l : c.listing)
    os << "  " << l << "\n";
  return os.str();
}

prop::Val from_host(const pto::HostTensor &t) {
  Val v = prop::detail::make_val(t.dtype(), t.shape());
  for (int64_t k = 0; k < t.numel(); ++k) {
    const auto u = static_cast<size_t>(k);
    if (pto::is_float(t.dtype()))
      v.f[u] = t.get(k);
    else if (t.dtype() == pto::DT_INT64)
      std::memcpy(&v.i[u], t.data_as<uint8_t>() + 8 * k, 8);
    else
      v.i[u] = static_cast<int64_t>(t.get(k));
  }
  return v;
}

std::string error_class(const pto::Error &e) {
  if (dynamic_cast<const pto::DeadlockError *>(&e))
    return "DeadlockError";
  if (dynamic_cast<const pto::ShapeError *>(&e))
    return "ShapeError";
  if (dynamic_cast<const pto::DTypeError *>(&e))
    return "DTypeError";
  if (dynamic_cast<const pto::TileShapeError *>(&e))
    return "TileShapeError";
  if (dynamic_cast<const pto::SymbolicError *>(&e))
    return "SymbolicError";
  if (dynamic_cast<const pto::DistributedError *>(&e))
    return "DistributedError";
  if (dynamic_cast<const pto::RuntimeError *>(&e))
    return "RuntimeError";
  if (dynamic_cast<const pto::ArgumentError *>(&e))
    return "ArgumentError";
  if (dynamic_cast<const pto::CompileError *>(&e))
    return "CompileError";
  if (dynamic_cast<const pto::InternalError *>(&e))
    return "InternalError";
  return "Error";
}

} // namespace fuzz
