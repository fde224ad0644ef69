// property_gen.cpp - See property_gen.h: the seeded generator of random well-typed programs
// (which evaluates each candidate op with the model of property_model.cpp and keeps it only when
// its values stay meaningful), and the program listing.
#include "support/property_gen.h"

#include "support/rng.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>

namespace prop {

using pto::DataType;
using namespace detail;

namespace {

template <class T> std::string list_str(const std::vector<T> &v) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  os << "}";
  return os.str();
}

} // namespace

// ---- names and listing -----------------------------------------------------------------------

const char *name(Op op) {
  static const char *const names[] = {"input",
                                      "full",
                                      "arange",
                                      "neg",
                                      "abs",
                                      "exp",
                                      "log",
                                      "sqrt",
                                      "rsqrt",
                                      "reciprocal",
                                      "exp2",
                                      "expm1",
                                      "log2",
                                      "log10",
                                      "log1p",
                                      "sin",
                                      "cos",
                                      "tan",
                                      "asin",
                                      "acos",
                                      "atan",
                                      "sinh",
                                      "cosh",
                                      "tanh",
                                      "asinh",
                                      "acosh",
                                      "atanh",
                                      "erf",
                                      "erfc",
                                      "cbrt",
                                      "sigmoid",
                                      "softplus",
                                      "softsign",
                                      "elu",
                                      "gelu",
                                      "gelu_tanh",
                                      "lrelu",
                                      "relu",
                                      "relu6",
                                      "sign",
                                      "signbit",
                                      "ceil",
                                      "floor",
                                      "trunc",
                                      "round",
                                      "isfinite",
                                      "isnan",
                                      "isinf",
                                      "logical_not",
                                      "bitwise_not",
                                      "square",
                                      "clone",
                                      "cast",
                                      "add",
                                      "sub",
                                      "mul",
                                      "div",
                                      "maximum",
                                      "minimum",
                                      "pow",
                                      "hypot",
                                      "atan2",
                                      "copysign",
                                      "fmod",
                                      "remainder",
                                      "floor_div",
                                      "logical_and",
                                      "logical_or",
                                      "logical_xor",
                                      "bitwise_and",
                                      "bitwise_or",
                                      "bitwise_xor",
                                      "bitwise_left_shift",
                                      "bitwise_right_shift",
                                      "eq",
                                      "ne",
                                      "lt",
                                      "le",
                                      "gt",
                                      "ge",
                                      "where",
                                      "clip",
                                      "sum",
                                      "amax",
                                      "amin",
                                      "prod",
                                      "mean",
                                      "var",
                                      "argmax",
                                      "argmin",
                                      "cumsum",
                                      "cumprod",
                                      "reshape",
                                      "unsqueeze",
                                      "squeeze",
                                      "expand",
                                      "transpose",
                                      "permute",
                                      "concat",
                                      "split",
                                      "stack",
                                      "tile",
                                      "pad",
                                      "tril",
                                      "triu",
                                      "view",
                                      "matmul"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::Matmul) + 1);
  return names[static_cast<size_t>(op)];
}

std::vector<int> Program::inputs() const {
  std::vector<int> r;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (nodes[k].op == Op::Input)
      r.push_back(static_cast<int>(k));
  return r;
}

std::vector<int> Program::outputs() const {
  std::vector<int> r;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (nodes[k].output)
      r.push_back(static_cast<int>(k));
  return r;
}

namespace {

std::string scalar_str(const Scalar &s, DataType dt) {
  std::ostringstream os;
  os.precision(17);
  if (s.typed)
    os << "Element(" << pto::short_name(dt) << ", ";
  if (s.is_int)
    os << s.i;
  else
    os << s.f << (s.f == std::trunc(s.f) ? ".0" : "");
  if (s.typed)
    os << ")";
  return os.str();
}

std::string arg_str(const Arg &a, DataType scalar_dt) {
  return a.node >= 0 ? "%" + std::to_string(a.node) : scalar_str(a.s, scalar_dt);
}

} // namespace

std::string describe(const Program &p) {
  std::ostringstream os;
  os.precision(17);
  os << "program seed " << p.seed << "\n";
  std::vector<int64_t> tile;
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const Node &n = p.nodes[k];
    if (n.op != Op::Input && n.op != Op::View && n.op != Op::Split && n.op != Op::Matmul &&
        n.tile != tile) {
      tile = n.tile;
      os << "  set_vec_tile_shapes" << list_str(tile) << "\n";
    }
    if (n.op == Op::Matmul)
      os << "  set_cube_tile_shapes(m " << list_str(Shape{n.cube[0], n.cube[1]}) << ", k "
         << list_str(Shape{n.cube[2], n.cube[3]}) << ", n " << list_str(Shape{n.cube[4], n.cube[5]})
         << (n.split_k ? ", split_k" : "") << ")\n";
    os << "  %" << k << " = ";
    // The dtype scalars take: the first tensor operand's.
    DataType sdt = n.dt;
    for (const Arg &a : n.args)
      if (a.node >= 0) {
        sdt = p.nodes[static_cast<size_t>(a.node)].dt;
        break;
      }
    if (n.op == Op::Where)
      for (size_t q = 1; q < n.args.size(); ++q)
        if (n.args[q].node >= 0)
          sdt = p.nodes[static_cast<size_t>(n.args[q].node)].dt;
    os << name(n.op) << "(";
    for (size_t q = 0; q < n.args.size(); ++q)
      os << (q ? ", " : "") << arg_str(n.args[q], sdt);
    switch (n.op) {
    case Op::Input:
      os << pto::short_name(n.dt) << " " << shape_str(n.shape);
      break;
    case Op::Full:
      os << shape_str(n.shape) << ", " << n.attr << ", " << pto::short_name(n.dt);
      break;
    case Op::Arange:
      os << "start " << n.attr << ", step " << n.attr2;
      break;
    case Op::Cast:
      os << ", " << pto::short_name(n.dt);
      break;
    case Op::Elu:
    case Op::Lrelu:
      os << ", " << n.attr;
      break;
    case Op::Sum:
    case Op::Amax:
    case Op::Amin:
    case Op::Prod:
    case Op::Mean:
    case Op::Var:
    case Op::Argmax:
    case Op::Argmin:
      os << ", " << (n.axis_list ? list_str(n.axes) : std::to_string(n.axes[0]));
      if (n.op == Op::Var)
        os << ", correction " << n.attr;
      if (n.keepdim)
        os << ", keepdim";
      break;
    case Op::Cumsum:
    case Op::Cumprod:
    case Op::Unsqueeze:
      os << ", " << n.axes[0];
      break;
    case Op::Squeeze:
    case Op::Permute:
      os << ", " << list_str(n.axes);
      break;
    case Op::Transpose:
      os << ", " << n.axes[0] << ", " << n.axes[1];
      break;
    case Op::Concat:
    case Op::Stack:
      os << ", dim " << n.axes[0];
      break;
    case Op::Split:
      os << ", " << (n.ints.size() == 1 ? std::to_string(n.ints[0]) : list_str(n.ints)) << ", dim "
         << n.axes[0] << ")[" << n.ints2[0] << "]";
      break;
    case Op::Reshape:
    case Op::Expand:
    case Op::Tile:
      os << ", " << list_str(n.ints);
      break;
    case Op::Pad:
      os << ", " << list_str(n.ints) << ", " << n.attr;
      break;
    case Op::Tril:
    case Op::Triu:
      os << ", " << n.diag;
      break;
    case Op::View:
      os << ", " << list_str(n.ints) << ", " << list_str(n.ints2);
      break;
    case Op::Matmul:
      os << ", " << pto::short_name(n.dt) << (n.a_trans ? ", a_trans" : "")
         << (n.b_trans ? ", b_trans" : "") << (n.args.size() > 2 ? ", bias %" : "")
         << (n.args.size() > 2 ? std::to_string(n.args[2].node) : "") << (n.relu ? ", relu" : "");
      break;
    default:
      break;
    }
    if (n.op != Op::Split)
      os << ")";
    os << "  -> " << pto::short_name(n.dt) << " " << shape_str(n.shape) << "\n";
  }
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (p.nodes[k].output)
      os << "  assemble(%" << k << ") into an output, tile " << list_str(p.nodes[k].out_tile)
         << "\n";
  return os.str();
}

// ---- the generator ---------------------------------------------------------------------------

namespace {

constexpr int64_t kMaxNumel = 768; ///< per value: keeps the interpreter and the model fast

/// Largest magnitude a float value may reach: far from overflow, so that the next ops (a sum, a
/// product, an exp) stay finite or get rejected by this same check.
double limit(DataType dt) {
  switch (dt) {
  case pto::DT_FP16:
    return 8192;
  case pto::DT_DOUBLE:
    return 1e6;
  default:
    return 1e5;
  }
}

bool is_signed_int(DataType dt) {
  return dt == pto::DT_INT8 || dt == pto::DT_INT16 || dt == pto::DT_INT32 || dt == pto::DT_INT64;
}

class Gen : support::Rng {
public:
  Gen(uint64_t seed, const GenOptions &o) : Rng(seed * 0x9E3779B97F4A7C15ull + 1), o_(o) {
    p_.seed = seed;
  }
  Program run();

private:
  GenOptions o_;
  Program p_;
  Shape tile_;
  int n_inputs_ = 0;

  DataType rand_dtype() {
    static const std::vector<DataType> dts = {
        pto::DT_FP32,  pto::DT_FP16,  pto::DT_BF16,  pto::DT_INT32, pto::DT_INT8,
        pto::DT_INT16, pto::DT_INT64, pto::DT_UINT8, pto::DT_BOOL,  pto::DT_DOUBLE};
    static const std::vector<double> w = {30, 15, 15, 12, 7, 4, 3, 5, 3, 6};
    return dts[weighted(w)];
  }
  /// Small dims: 1, below / at / past 16 lanes, primes that no tile divides.
  int64_t rand_dim() {
    static const std::vector<int64_t> dims = {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 24, 33};
    static const std::vector<double> w = {14, 8, 9, 6, 7, 6, 5, 4, 4, 4, 5, 5, 3, 2};
    return dims[weighted(w)];
  }
  Shape rand_shape(int rank) {
    Shape s;
    for (int d = 0; d < rank; ++d)
      s.push_back(rand_dim());
    while (numel(s) > 360) // keep inputs small; shrink the largest dim
      *std::max_element(s.begin(), s.end()) /= 2;
    return s;
  }
  /// A vec tile of rank `rank` (at least the shape's) for an op over `s`: entries below, at or
  /// past the dims, sometimes not dividing them.
  Shape rand_tile(size_t rank, const Shape &s) {
    Shape t;
    for (size_t d = 0; d < rank; ++d) {
      int64_t dim = d < s.size() ? s[d] : 4;
      switch (irand(0, 6)) {
      case 0:
        t.push_back(dim);
        break;
      case 1:
        t.push_back(dim + irand(1, 3));
        break;
      case 2:
        t.push_back(std::max<int64_t>(1, dim - 1));
        break;
      case 3:
        t.push_back(pick<int64_t>({1, 2, 3}));
        break;
      case 4:
        t.push_back(pick<int64_t>({4, 5, 8}));
        break;
      case 5:
        t.push_back(pick<int64_t>({16, 17, 32}));
        break;
      default:
        t.push_back(pick<int64_t>({7, 64}));
        break;
      }
    }
    return t;
  }

  /// Input data. Floats: uniform in [-2, 2], a k/2, k/4 or k/8 grid in [-4, 4] (exact sums, ties),
  /// positive in [0.25, 3], or wide in [-30, 30]; `nonzero` keeps |x| >= 0.5. Ints: small or
  /// full-range values; shift amounts in [-1, bits].
  Val rand_data(DataType dt, const Shape &s, bool nonzero = false, bool shift = false) {
    Val v = make_val(dt, s);
    const int mode = static_cast<int>(irand(0, 9));
    const int64_t grid = pick<int64_t>({2, 4, 8}); // k / grid: ties, integers, exact sums
    for (int64_t k = 0; k < v.numel(); ++k) {
      const auto u = static_cast<size_t>(k);
      if (pto::is_float(dt)) {
        double x = 0;
        if (mode < 4)
          x = frand(-2, 2);
        else if (mode < 7)
          x = static_cast<double>(irand(-4 * grid, 4 * grid)) / static_cast<double>(grid);
        else if (mode < 9)
          x = frand(0.25, 3);
        else
          x = frand(-30, 30);
        if (nonzero && std::fabs(x) < 0.5)
          x = x < 0 ? x - 0.5 : x + 0.5;
        v.f[u] = round_dt(dt, x);
        continue;
      }
      int64_t x = 0;
      if (shift) // in range, and just out of it on both sides (-1 only when it is a value of dt)
        x = irand(dt == pto::DT_UINT8 ? 0 : -1, bits_of(dt));
      else if (dt == pto::DT_BOOL)
        x = irand(0, 1);
      else if (mode == 9 && dt != pto::DT_INT64)
        x = irand(int_lo(dt), int_hi(dt));
      else
        x = dt == pto::DT_UINT8   ? irand(0, 40)
            : dt == pto::DT_INT8  ? irand(-20, 20)
            : dt == pto::DT_INT16 ? irand(-300, 300)
                                  : irand(-1000, 1000);
      if (nonzero && x == 0)
        x = 1;
      v.i[u] = x;
    }
    return v;
  }

  // ---- nodes -------------------------------------------------------------------------------
  /// The tile rank op `n` needs: its input's rank for reductions and scans, else its output's.
  size_t tile_rank(const Node &n) const {
    size_t r = n.shape.size();
    switch (n.op) {
    case Op::Sum:
    case Op::Amax:
    case Op::Amin:
    case Op::Prod:
    case Op::Mean:
    case Op::Var:
    case Op::Argmax:
    case Op::Argmin:
    case Op::Cumsum:
    case Op::Cumprod:
      return p_.nodes[static_cast<size_t>(n.args[0].node)].shape.size();
    default:
      return r;
    }
  }

  bool acceptable(const Val &v) const {
    int64_t undet = 0;
    for (int64_t k = 0; k < v.numel(); ++k) {
      const auto u = static_cast<size_t>(k);
      if (std::isinf(v.err[u])) {
        ++undet;
        continue;
      }
      if (pto::is_float(v.dt)) {
        if (!std::isfinite(v.f[u]) || std::fabs(v.f[u]) > limit(v.dt) || !std::isfinite(v.err[u]))
          return false;
      } else if (v.dt == pto::DT_INT64 &&
                 (v.i[u] > (int64_t{1} << 52) || v.i[u] < -(int64_t{1} << 52))) {
        return false;
      }
    }
    return undet * 10 <= v.numel();
  }

  /// Appends `n` if it evaluates to an acceptable value; returns its index or -1.
  int push(Node n) {
    if (numel(n.shape) > kMaxNumel || n.shape.empty() || n.shape.size() > 4)
      return -1;
    Shape saved = tile_;
    const bool needs_tile = n.op != Op::View && n.op != Op::Split && n.op != Op::Matmul;
    if (needs_tile) {
      size_t need = tile_rank(n);
      if (tile_.size() < need || coin(0.2)) {
        size_t rank = coin(0.15) ? static_cast<size_t>(irand(static_cast<int64_t>(need), 4)) : need;
        const Shape &ts =
            need == n.shape.size() ? n.shape : p_.nodes[static_cast<size_t>(n.args[0].node)].shape;
        tile_ = rand_tile(rank, ts);
      }
    }
    n.tile = tile_;
    p_.nodes.push_back(n);
    Val v;
    if (!evaluate(p_, p_.nodes.size() - 1, v) || !acceptable(v)) {
      p_.nodes.pop_back();
      tile_ = saved;
      return -1;
    }
    p_.vals.push_back(std::move(v));
    return static_cast<int>(p_.nodes.size()) - 1;
  }

  int add_input(DataType dt, const Shape &s, bool nonzero = false, bool shift = false) {
    if (n_inputs_ >= o_.max_inputs || numel(s) > kMaxNumel)
      return -1;
    Node n;
    n.op = Op::Input;
    n.dt = dt;
    n.shape = s;
    p_.nodes.push_back(n);
    p_.vals.push_back(rand_data(dt, s, nonzero, shift));
    ++n_inputs_;
    return static_cast<int>(p_.nodes.size()) - 1;
  }

  const Node &node(int k) const { return p_.nodes[static_cast<size_t>(k)]; }
  const Val &val(int k) const { return p_.vals[static_cast<size_t>(k)]; }

  /// A shape that broadcasts with `s`: the same, some dims 1, a suffix, or (where s has 1s)
  /// larger dims there.
  Shape partner_shape(const Shape &s) {
    Shape t = s;
    switch (irand(0, 5)) {
    case 0:
    case 1:
      break;
    case 2:
      for (auto &d : t)
        if (coin(0.5))
          d = 1;
      break;
    case 3:
      t.erase(t.begin(), t.begin() + irand(0, static_cast<int64_t>(t.size()) - 1));
      for (auto &d : t)
        if (coin(0.3))
          d = 1;
      break;
    case 4:
      for (auto &d : t)
        d = d == 1 ? pick<int64_t>({1, 2, 3, 5}) : (coin(0.3) ? 1 : d);
      break;
    default:
      t = {1};
      break;
    }
    return t;
  }

  /// A float scalar exactly representable in every float dtype (bf16 has 8 bits).
  double float_scalar(bool nonzero) {
    static const std::vector<double> v = {0.5, 1, 2, -1, 0.25, 3, -2.5, 1.5, 0.125, 4, -0.75, 0};
    double x = pick(v);
    return nonzero && x == 0 ? 1.5 : x;
  }

  Scalar rand_scalar(DataType dt, bool nonzero, bool shift) {
    Scalar s;
    s.typed = coin(0.25);
    if (pto::is_float(dt) && coin(0.7)) {
      s.is_int = false;
      s.f = float_scalar(nonzero);
      return s;
    }
    s.is_int = true;
    if (shift)
      s.i = irand(dt == pto::DT_UINT8 ? 0 : -1, bits_of(dt));
    else if (dt == pto::DT_BOOL)
      s.i = irand(0, 1);
    else if (dt == pto::DT_UINT8)
      s.i = irand(0, 9);
    else
      s.i = irand(-5, 5);
    if (nonzero && s.i == 0)
      s.i = dt == pto::DT_BOOL ? 1 : 2;
    s.f = static_cast<double>(s.i);
    return s;
  }

  /// A second operand for a binary op on node `x`: a scalar, an existing node, a new input or a
  /// full() constant of a broadcasting shape and x's dtype. -1 (node) with s set for a scalar.
  Arg other_operand(int x, bool nonzero, bool shift, bool allow_scalar = true) {
    return other_operand(node(x).dt, node(x).shape, nonzero, shift, allow_scalar);
  }
  /// The same for an operand of dtype `dt` that must broadcast with shape `s`.
  Arg other_operand(DataType dt, const Shape &s, bool nonzero, bool shift, bool allow_scalar) {
    const size_t kind = weighted({allow_scalar ? 35.0 : 0.0, 25, 33, 7});
    if (kind == 0)
      return Arg{-1, rand_scalar(dt, nonzero, shift)};
    if (kind == 1) {
      std::vector<int> cands;
      for (size_t k = 0; k < p_.nodes.size(); ++k)
        if (p_.nodes[k].dt == dt && broadcastable(p_.nodes[k].shape, s) &&
            numel(broadcast(p_.nodes[k].shape, s)) <= kMaxNumel)
          cands.push_back(static_cast<int>(k));
      if (!cands.empty())
        return Arg{pick(cands), {}};
    }
    if (kind == 3 && (dt == pto::DT_INT32 || dt == pto::DT_FP32) && coin(0.4)) {
      // arange along the last dim: int32 start + i * step, or fp32 start + i * step rounded once.
      Node a;
      a.op = Op::Arange;
      a.dt = dt;
      a.shape = {s.back()};
      a.attr = static_cast<double>(irand(-4, 4));
      a.attr2 = dt == pto::DT_INT32 ? static_cast<double>(pick<int64_t>({1, 2, -1, 3}))
                                    : pick<double>({0.5, 0.25, -0.75, 0.1});
      int k = push(a);
      if (k >= 0)
        return Arg{k, {}};
    }
    Shape t = partner_shape(s);
    if (kind != 3) {
      int k = add_input(dt, t, nonzero, shift);
      if (k >= 0)
        return Arg{k, {}};
    }
    Node f;
    f.op = Op::Full;
    f.dt = dt;
    f.shape = t;
    Scalar sc = rand_scalar(dt, nonzero, shift);
    f.attr = sc.is_int ? static_cast<double>(sc.i) : sc.f;
    int k = push(f);
    if (k >= 0)
      return Arg{k, {}};
    return Arg{-1, rand_scalar(dt, nonzero, shift)};
  }

  /// The node's result shape for elementwise ops over `args`.
  Shape ew_shape(const std::vector<Arg> &args) const {
    Shape s;
    bool first = true;
    for (const Arg &a : args) {
      if (a.node < 0)
        continue;
      s = first ? node(a.node).shape : broadcast(s, node(a.node).shape);
      first = false;
    }
    return s;
  }

  // ---- op builders (each returns true when it appended at least one op) --------------------
  bool unary(int x);
  bool binary(int x);
  bool compare_where(int x);
  bool clip(int x);
  bool cast(int x);
  bool reduce(int x);
  bool scan(int x);
  bool movement(int x);
  bool matmul(int x);

  int push_unary(Op op, int x, double attr = 0) {
    Node n;
    n.op = op;
    n.args = {Arg{x, {}}};
    n.dt = bool_result(op) ? pto::DT_BOOL : node(x).dt;
    n.shape = node(x).shape;
    n.attr = attr;
    return push(n);
  }
  int push_binary(Op op, Arg a, Arg b) {
    Node n;
    n.op = op;
    n.args = {a, b};
    const DataType dt = a.node >= 0 ? node(a.node).dt : node(b.node).dt;
    n.dt = bool_result(op) ? pto::DT_BOOL : dt;
    n.shape = ew_shape(n.args);
    return push(n);
  }
  /// clip(x, lo, hi) with scalar bounds.
  int push_clip(int x, double lo, double hi) {
    Node n;
    n.op = Op::Clip;
    Scalar a, b;
    a.is_int = b.is_int = false;
    a.f = lo;
    b.f = hi;
    n.args = {Arg{x, {}}, Arg{-1, a}, Arg{-1, b}};
    n.dt = node(x).dt;
    n.shape = node(x).shape;
    return push(n);
  }
  /// A positive version of float node x: abs(x) + c.
  int positive(int x, double c) {
    int a = push_unary(Op::Abs, x);
    if (a < 0)
      return -1;
    Scalar s;
    s.is_int = false;
    s.f = c;
    return push_binary(Op::Add, Arg{a, {}}, Arg{-1, s});
  }
};

bool Gen::unary(int x) {
  const DataType dt = node(x).dt;
  if (!pto::is_float(dt)) {
    std::vector<Op> ops = {Op::Relu,  Op::Relu6,      Op::Sign,       Op::Signbit,  Op::Ceil,
                           Op::Floor, Op::Trunc,      Op::Round,      Op::IsFinite, Op::IsNan,
                           Op::IsInf, Op::LogicalNot, Op::BitwiseNot, Op::Square,   Op::Clone};
    if (dt == pto::DT_BOOL)
      ops = {Op::LogicalNot, Op::BitwiseNot, Op::Clone};
    else if (is_signed_int(dt))
      for (int k = 0; k < 3; ++k) {
        ops.push_back(Op::Neg);
        ops.push_back(Op::Abs);
      }
    return push_unary(pick(ops), x) >= 0;
  }
  static const std::vector<Op> ops = {
      Op::Neg,        Op::Abs,     Op::Exp,      Op::Log,        Op::Sqrt,     Op::Rsqrt,
      Op::Reciprocal, Op::Exp2,    Op::Expm1,    Op::Log2,       Op::Log10,    Op::Log1p,
      Op::Sin,        Op::Cos,     Op::Tan,      Op::Asin,       Op::Acos,     Op::Atan,
      Op::Sinh,       Op::Cosh,    Op::Tanh,     Op::Asinh,      Op::Acosh,    Op::Atanh,
      Op::Erf,        Op::Erfc,    Op::Cbrt,     Op::Sigmoid,    Op::Softplus, Op::Softsign,
      Op::Elu,        Op::Gelu,    Op::GeluTanh, Op::Lrelu,      Op::Relu,     Op::Relu6,
      Op::Sign,       Op::Signbit, Op::Ceil,     Op::Floor,      Op::Trunc,    Op::Round,
      Op::IsFinite,   Op::IsNan,   Op::IsInf,    Op::LogicalNot, Op::Square,   Op::Clone};
  const Op op = pick(ops);
  double attr = op == Op::Elu ? pick<double>({1.0, 0.5, 1.7}) : 0;
  if (op == Op::Lrelu)
    attr = pick<double>({0.5, 0.25, 0.125, 0.0625, 0}); // dyadic: the product is exact
  if (push_unary(op, x, attr) >= 0)
    return true;
  // Out of the op's domain or range: move x into it first.
  int y = -1;
  switch (op) {
  case Op::Log:
  case Op::Log2:
  case Op::Log10:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Reciprocal:
  case Op::Log1p:
    y = positive(x, pick<double>({0.25, 0.5, 1.5}));
    break;
  case Op::Acosh:
    y = positive(x, pick<double>({1, 1.5}));
    break;
  case Op::Asin:
  case Op::Acos:
  case Op::Atanh:
    y = push_clip(x, -0.875, 0.875);
    break;
  case Op::Tan:
    y = push_clip(x, -1.25, 1.25);
    break;
  default:
    y = push_clip(x, -4, 4);
    break;
  }
  if (y < 0)
    return false;
  push_unary(op, y, attr); // y itself is an op even when this one is rejected
  return true;
}

bool Gen::binary(int x) {
  const DataType dt = node(x).dt;
  std::vector<Op> ops;
  if (dt == pto::DT_BOOL) {
    ops = {Op::BitwiseAnd, Op::BitwiseOr, Op::BitwiseXor,
           Op::LogicalAnd, Op::LogicalOr, Op::LogicalXor};
  } else if (pto::is_float(dt)) {
    ops = {Op::Add,       Op::Add,        Op::Sub,       Op::Sub,       Op::Mul,
           Op::Mul,       Op::Div,        Op::Div,       Op::Maximum,   Op::Minimum,
           Op::Pow,       Op::Hypot,      Op::Atan2,     Op::Copysign,  Op::Fmod,
           Op::Remainder, Op::LogicalAnd, Op::LogicalOr, Op::LogicalXor};
    if (dt != pto::DT_DOUBLE) // floor(a / b) of doubles is not exactly floor of the quotient
      ops.push_back(Op::FloorDiv);
  } else {
    ops = {Op::Add,        Op::Add,        Op::Sub,       Op::Mul,        Op::Mul,
           Op::Div,        Op::Maximum,    Op::Minimum,   Op::Fmod,       Op::Remainder,
           Op::FloorDiv,   Op::BitwiseAnd, Op::BitwiseOr, Op::BitwiseXor, Op::ShiftLeft,
           Op::ShiftRight, Op::LogicalXor};
  }
  const Op op = pick(ops);
  const bool divides = op == Op::Div || op == Op::Fmod || op == Op::Remainder || op == Op::FloorDiv;
  const bool shift = op == Op::ShiftLeft || op == Op::ShiftRight;
  int a = x;
  if (op == Op::Pow) // positive bases; the exponent moderate
    a = positive(x, pick<double>({0.25, 0.5, 1}));
  if (a < 0)
    return false;
  Arg other = other_operand(a, divides, shift);
  if (op == Op::Pow && other.node >= 0) {
    int c = push_clip(other.node, -2, 2);
    if (c < 0)
      return a != x;
    other.node = c;
  }
  // The new operand goes first now and then (the scalar forms `2 - x` included); never for the
  // ops whose second operand had to be special.
  bool swap = !divides && !shift && op != Op::Pow && coin(0.3);
  int r = swap ? push_binary(op, other, Arg{a, {}}) : push_binary(op, Arg{a, {}}, other);
  return r >= 0 || a != x;
}

bool Gen::compare_where(int x) {
  const DataType dt = node(x).dt;
  int cond = x;
  if (dt != pto::DT_BOOL || coin(0.3)) {
    static const std::vector<Op> cmps = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
    Op op = pick(cmps);
    if (coin(0.15))
      op = pick<Op>({Op::LogicalAnd, Op::LogicalOr, Op::LogicalXor});
    Arg other = other_operand(x, false, false);
    cond = coin(0.2) ? push_binary(op, other, Arg{x, {}}) : push_binary(op, Arg{x, {}}, other);
    if (cond < 0)
      return false;
    if (coin(0.3))
      return true;
  }
  // where(cond, a, b): a value node (x itself when it is not the condition), and a second
  // operand of its dtype or scalars.
  int v = cond != x ? x : -1;
  if (v < 0) {
    std::vector<int> cands;
    for (size_t k = 0; k < p_.nodes.size(); ++k)
      if (broadcastable(p_.nodes[k].shape, node(cond).shape) &&
          numel(broadcast(p_.nodes[k].shape, node(cond).shape)) <= kMaxNumel)
        cands.push_back(static_cast<int>(k));
    v = pick(cands);
  }
  Node n;
  n.op = Op::Where;
  const DataType vdt = node(v).dt;
  if (coin(0.1)) { // two scalars: DT_INT32 or DT_FP32, as `full` infers them
    Scalar a = rand_scalar(pto::DT_FP32, false, false), b = rand_scalar(pto::DT_FP32, false, false);
    a.typed = b.typed = false;
    b.is_int = a.is_int;
    b.f = static_cast<double>(b.i);
    if (!a.is_int)
      b.f = float_scalar(false);
    n.args = {Arg{cond, {}}, Arg{-1, a}, Arg{-1, b}};
    n.dt = a.is_int ? pto::DT_INT32 : pto::DT_FP32;
  } else {
    Arg other = other_operand(vdt, broadcast(node(v).shape, node(cond).shape), false, false, true);
    n.args = coin(0.5) ? std::vector<Arg>{Arg{cond, {}}, Arg{v, {}}, other}
                       : std::vector<Arg>{Arg{cond, {}}, other, Arg{v, {}}};
    n.dt = vdt;
  }
  n.shape = ew_shape(n.args);
  push(n);
  return true;
}

bool Gen::clip(int x) {
  const DataType dt = node(x).dt;
  if (dt == pto::DT_BOOL)
    return false;
  Node n;
  n.op = Op::Clip;
  n.dt = dt;
  if (coin(0.6)) {
    Scalar lo = rand_scalar(dt, false, false), hi = rand_scalar(dt, false, false);
    lo.typed = hi.typed = false;
    if (!pto::is_float(dt))
      lo.is_int = hi.is_int = true;
    auto value = [](const Scalar &s) { return s.is_int ? static_cast<double>(s.i) : s.f; };
    if (value(lo) > value(hi) && coin(0.85))
      std::swap(lo, hi);
    n.args = {Arg{x, {}}, Arg{-1, lo}, Arg{-1, hi}};
  } else {
    Arg lo = other_operand(x, false, false, false);
    if (lo.node < 0)
      return false;
    Arg hi = other_operand(dt, broadcast(node(x).shape, node(lo.node).shape), false, false, false);
    if (hi.node < 0)
      return false;
    n.args = {Arg{x, {}}, lo, hi};
  }
  n.shape = ew_shape(n.args);
  return push(n) >= 0;
}

bool Gen::cast(int x) {
  static const std::vector<DataType> dts = {
      pto::DT_FP32,  pto::DT_FP16,  pto::DT_BF16,  pto::DT_DOUBLE, pto::DT_INT8,
      pto::DT_INT16, pto::DT_INT32, pto::DT_INT64, pto::DT_UINT8,  pto::DT_BOOL};
  Node n;
  n.op = Op::Cast;
  n.args = {Arg{x, {}}};
  n.dt = pick(dts);
  if (n.dt == node(x).dt)
    return false;
  n.shape = node(x).shape;
  return push(n) >= 0;
}

bool Gen::reduce(int x) {
  const DataType dt = node(x).dt;
  const Shape &s = node(x).shape;
  if (dt == pto::DT_BOOL)
    return false;
  std::vector<Op> ops = {Op::Sum, Op::Sum, Op::Amax, Op::Amin, Op::Prod, Op::Argmax, Op::Argmin};
  if (pto::is_float(dt))
    ops.insert(ops.end(), {Op::Mean, Op::Mean, Op::Var});
  Node n;
  n.op = pick(ops);
  n.args = {Arg{x, {}}};
  n.keepdim = coin(0.5);
  const auto r = static_cast<int>(s.size());
  const bool arg = n.op == Op::Argmax || n.op == Op::Argmin;
  if (!arg && r >= 2 && coin(0.35)) {
    n.axis_list = true;
    if (!coin(0.1))
      for (int d = 0; d < r; ++d)
        if (coin(0.5))
          n.axes.push_back(coin(0.3) ? d - r : d);
    if (n.axes.empty() && coin(0.5))
      n.axes.push_back(static_cast<int>(irand(0, r - 1)));
  } else {
    int a = static_cast<int>(irand(0, r - 1));
    n.axes = {coin(0.3) ? a - r : a};
  }
  n.attr = n.op == Op::Var ? pick<double>({1, 1, 0}) : 0;
  n.dt = arg ? pto::DT_INT32 : dt;
  n.shape = reduced_shape(s, norm_axes(n, s.size()), n.keepdim);
  return push(n) >= 0;
}

bool Gen::scan(int x) {
  const DataType dt = node(x).dt;
  if (dt == pto::DT_BOOL)
    return false;
  Node n;
  n.op = coin(0.7) ? Op::Cumsum : Op::Cumprod;
  n.args = {Arg{x, {}}};
  const auto r = static_cast<int>(node(x).shape.size());
  int a = static_cast<int>(irand(0, r - 1));
  n.axes = {coin(0.3) ? a - r : a};
  n.dt = pto::is_float(dt) ? dt : pto::DT_INT64;
  n.shape = node(x).shape;
  return push(n) >= 0;
}

bool Gen::movement(int x) {
  const DataType dt = node(x).dt;
  const Shape s = node(x).shape;
  const auto r = static_cast<int>(s.size());
  Node n;
  n.args = {Arg{x, {}}};
  n.dt = dt;
  static const std::vector<Op> ops = {
      Op::Reshape,   Op::Reshape, Op::Unsqueeze, Op::Squeeze, Op::Expand, Op::Expand, Op::Transpose,
      Op::Transpose, Op::Permute, Op::Concat,    Op::Concat,  Op::Split,  Op::Stack,  Op::Tile,
      Op::Pad,       Op::Pad,     Op::Tril,      Op::Triu,    Op::View,   Op::View};
  n.op = pick(ops);
  switch (n.op) {
  case Op::Reshape: {
    int64_t left = numel(s);
    const int t = static_cast<int>(irand(1, 4));
    Shape out;
    for (int d = 0; d + 1 < t; ++d) {
      std::vector<int64_t> divs;
      for (int64_t q = 1; q <= left; ++q)
        if (left % q == 0)
          divs.push_back(q);
      int64_t q = pick(divs);
      out.push_back(q);
      left /= q;
    }
    out.push_back(left);
    n.shape = out;
    n.ints = out;
    if (coin(0.25))
      n.ints[static_cast<size_t>(irand(0, t - 1))] = -1;
    break;
  }
  case Op::Unsqueeze: {
    if (r >= 4)
      return false;
    int d = static_cast<int>(irand(-r - 1, r));
    n.axes = {d};
    n.shape = s;
    n.shape.insert(n.shape.begin() + (d < 0 ? d + r + 1 : d), 1);
    break;
  }
  case Op::Squeeze: {
    std::vector<bool> drop(static_cast<size_t>(r), false);
    if (coin(0.3)) {
      std::fill(drop.begin(), drop.end(), true);
    } else {
      for (int d = 0; d < r; ++d)
        if (coin(0.5)) {
          n.axes.push_back(coin(0.3) ? d - r : d);
          drop[static_cast<size_t>(d)] = true;
        }
      if (n.axes.empty())
        std::fill(drop.begin(), drop.end(), true);
    }
    for (int d = 0; d < r; ++d)
      if (!(drop[static_cast<size_t>(d)] && s[static_cast<size_t>(d)] == 1))
        n.shape.push_back(s[static_cast<size_t>(d)]);
    if (n.shape.empty())
      n.shape = {1};
    break;
  }
  case Op::Expand: {
    const int lead = r < 4 && coin(0.4) ? static_cast<int>(irand(1, 4 - r)) : 0;
    for (int d = 0; d < lead; ++d) {
      n.ints.push_back(pick<int64_t>({1, 2, 3}));
      n.shape.push_back(n.ints.back());
    }
    for (int64_t d : s) {
      int64_t t = d == 1 ? pick<int64_t>({1, 2, 3, 5, 16}) : d;
      n.shape.push_back(t);
      n.ints.push_back(d != 1 && coin(0.3) ? -1 : t);
    }
    break;
  }
  case Op::Transpose: {
    if (r < 2)
      return false;
    int a = static_cast<int>(irand(0, r - 1)), b = static_cast<int>(irand(0, r - 1));
    n.axes = {coin(0.2) ? a - r : a, b};
    n.shape = s;
    std::swap(n.shape[static_cast<size_t>(a)], n.shape[static_cast<size_t>(b)]);
    break;
  }
  case Op::Permute: {
    std::vector<int> perm(static_cast<size_t>(r));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), engine());
    for (int pd : perm) {
      n.axes.push_back(coin(0.2) ? pd - r : pd);
      n.shape.push_back(s[static_cast<size_t>(pd)]);
    }
    break;
  }
  case Op::Concat:
  case Op::Stack: {
    if (n.op == Op::Stack && r >= 4)
      return false;
    const int d = static_cast<int>(n.op == Op::Stack ? irand(0, r) : irand(0, r - 1));
    const auto ud = static_cast<size_t>(d);
    const int parts = static_cast<int>(irand(1, 2));
    int64_t total = n.op == Op::Stack ? 1 : s[ud];
    for (int q = 0; q < parts; ++q) {
      Shape t = s;
      if (n.op == Op::Concat)
        t[ud] = pick<int64_t>({1, 2, 3, 5, 8, 16});
      // An existing node of that shape, x itself, or a new input.
      int k = -1;
      if (coin(0.3))
        k = x;
      for (size_t c = 0; c < p_.nodes.size() && k < 0 && coin(0.5); ++c)
        if (p_.nodes[c].dt == dt && p_.nodes[c].shape.size() == s.size()) {
          bool same = true;
          for (size_t e = 0; e < s.size(); ++e)
            same = same && (e == ud && n.op == Op::Concat ? true : p_.nodes[c].shape[e] == s[e]);
          if (same)
            k = static_cast<int>(c);
        }
      if (k < 0)
        k = add_input(dt, t);
      if (k < 0)
        k = x;
      n.args.push_back(Arg{k, {}});
      total += n.op == Op::Stack ? 1 : node(k).shape[ud];
    }
    n.shape = s;
    if (n.op == Op::Stack)
      n.shape.insert(n.shape.begin() + d, total);
    else
      n.shape[ud] = total;
    n.axes = {coin(0.2) ? d - static_cast<int>(n.shape.size()) : d};
    break;
  }
  case Op::Split: {
    std::vector<int> ds;
    for (int d = 0; d < r; ++d)
      if (s[static_cast<size_t>(d)] >= 2)
        ds.push_back(d);
    if (ds.empty())
      return false;
    const int d = pick(ds);
    const int64_t len = s[static_cast<size_t>(d)];
    if (coin(0.5)) {
      n.ints = {irand(1, len - 1)};
    } else {
      for (int64_t left = len; left > 0;) {
        int64_t q = irand(1, left);
        n.ints.push_back(q);
        left -= q;
      }
    }
    std::vector<int64_t> sizes;
    if (n.ints.size() == 1)
      for (int64_t left = len; left > 0; left -= n.ints[0])
        sizes.push_back(std::min(n.ints[0], left));
    else
      sizes = n.ints;
    n.ints2 = {irand(0, static_cast<int64_t>(sizes.size()) - 1)};
    n.axes = {coin(0.2) ? d - r : d};
    n.shape = s;
    n.shape[static_cast<size_t>(d)] = sizes[static_cast<size_t>(n.ints2[0])];
    break;
  }
  case Op::Tile: {
    const int len = static_cast<int>(irand(1, 4));
    for (int q = 0; q < len; ++q)
      n.ints.push_back(pick<int64_t>({1, 1, 2, 3}));
    const int out_rank = std::max(len, r);
    if (out_rank > 4)
      return false;
    Shape xs = s, reps = n.ints;
    while (static_cast<int>(xs.size()) < out_rank)
      xs.insert(xs.begin(), 1);
    while (static_cast<int>(reps.size()) < out_rank)
      reps.insert(reps.begin(), 1);
    for (int d = 0; d < out_rank; ++d)
      n.shape.push_back(xs[static_cast<size_t>(d)] * reps[static_cast<size_t>(d)]);
    break;
  }
  case Op::Pad: {
    n.ints = {0, irand(0, 4)};
    if (r >= 2 && coin(0.5)) {
      n.ints.push_back(0);
      n.ints.push_back(irand(0, 4));
    }
    n.attr = pto::is_float(dt) ? float_scalar(false)
                               : static_cast<double>(rand_scalar(dt, false, false).i);
    n.shape = s;
    n.shape[static_cast<size_t>(r - 1)] += n.ints[1];
    if (n.ints.size() == 4)
      n.shape[static_cast<size_t>(r - 2)] += n.ints[3];
    break;
  }
  case Op::Tril:
  case Op::Triu:
    if (r < 2)
      return false;
    n.diag = irand(-3, 3);
    n.shape = s;
    break;
  default: { // View
    for (int64_t d : s) {
      int64_t w = irand(1, d);
      n.ints.push_back(w);
      n.ints2.push_back(irand(0, d - w));
    }
    n.shape = n.ints;
    break;
  }
  }
  return push(n) >= 0;
}

bool Gen::matmul(int x) {
  DataType dt = node(x).dt;
  const Shape s = node(x).shape;
  const size_t r = s.size();
  if (r < 2)
    return false;
  int a = x;
  if (dt != pto::DT_FP32 && dt != pto::DT_FP16 && dt != pto::DT_BF16 && dt != pto::DT_INT8) {
    Node c;
    c.op = Op::Cast;
    c.args = {Arg{x, {}}};
    c.dt = pick<DataType>({pto::DT_FP32, pto::DT_FP16, pto::DT_BF16});
    c.shape = s;
    a = push(c);
    if (a < 0)
      return false;
    dt = c.dt;
  }
  Node n;
  n.op = Op::Matmul;
  n.a_trans = coin(0.25);
  n.b_trans = coin(0.25);
  const int64_t M = n.a_trans ? s[r - 1] : s[r - 2], K = n.a_trans ? s[r - 2] : s[r - 1];
  const int64_t N = pick<int64_t>({1, 3, 5, 8, 16, 17});
  Shape bs, out;
  for (size_t d = 0; d + 2 < r; ++d) {
    int64_t bd = s[d] == 1 ? pick<int64_t>({1, 2, 3}) : (coin(0.3) ? 1 : s[d]);
    bs.push_back(bd);
    out.push_back(std::max(s[d], bd));
  }
  bs.push_back(n.b_trans ? N : K);
  bs.push_back(n.b_trans ? K : N);
  out.push_back(M);
  out.push_back(N);
  if (numel(out) > kMaxNumel)
    return a != x;
  const int b = add_input(dt, bs);
  if (b < 0)
    return a != x;
  n.dt = dt == pto::DT_FP32   ? pto::DT_FP32
         : dt == pto::DT_INT8 ? pto::DT_INT32
                              : pick<DataType>({dt, pto::DT_FP32});
  n.args = {Arg{a, {}}, Arg{b, {}}};
  if (coin(0.15)) {
    int bias = add_input(n.dt, coin(0.5) ? Shape{N} : Shape{1, N});
    if (bias >= 0)
      n.args.push_back(Arg{bias, {}});
  }
  n.relu = coin(0.2);
  n.split_k = n.args.size() == 2 && !n.relu && (n.dt == pto::DT_FP32 || n.dt == pto::DT_INT32) &&
              coin(0.15);
  const int64_t m0 = pick<int64_t>({1, 2, 4, 8, 16, 32}), k0 = pick<int64_t>({16, 32}),
                n0 = pick<int64_t>({16, 32});
  n.cube = {m0, m0 * pick<int64_t>({1, 2, 4}), k0, k0 * pick<int64_t>({1, 2}),
            n0, n0 * pick<int64_t>({1, 2})};
  n.shape = out;
  push(n);
  return true;
}

Program Gen::run() {
  // Ranks 1-4, mostly 2-3; op counts over the whole range, mostly short (JIT compile time
  // grows with both, and it is what the suite's run time is made of).
  add_input(rand_dtype(), rand_shape(static_cast<int>(1 + weighted({2, 4, 3, 2}))));
  std::vector<double> w;
  for (int k = o_.min_ops; k <= o_.max_ops; ++k)
    w.push_back(k <= 4 ? 4.0 : k <= 6 ? 2.5 : 1.0);
  const int target = o_.min_ops + static_cast<int>(weighted(w));
  int ops = 0;
  for (int attempt = 0; attempt < 80 && ops < target; ++attempt) {
    // The primary operand: mostly the newest node (chains), else any node (a DAG).
    const auto last = static_cast<int>(p_.nodes.size()) - 1;
    int x = coin(0.65) ? last : static_cast<int>(irand(0, last));
    const size_t before = p_.nodes.size();
    switch (weighted({22, 24, 11, 3, 8, 10, 4, 16, 3})) {
    case 0:
      unary(x);
      break;
    case 1:
      binary(x);
      break;
    case 2:
      compare_where(x);
      break;
    case 3:
      clip(x);
      break;
    case 4:
      cast(x);
      break;
    case 5:
      reduce(x);
      break;
    case 6:
      scan(x);
      break;
    case 7:
      movement(x);
      break;
    default:
      matmul(x);
      break;
    }
    for (size_t k = before; k < p_.nodes.size(); ++k)
      ops += p_.nodes[k].op != Op::Input;
  }
  // Outputs: the newest op, and a few earlier ones (intermediates that fused chains must store).
  std::vector<int> ops_idx;
  for (size_t k = 0; k < p_.nodes.size(); ++k)
    if (p_.nodes[k].op != Op::Input)
      ops_idx.push_back(static_cast<int>(k));
  if (ops_idx.empty()) { // nothing was accepted: a clone always is
    push_unary(Op::Clone, 0);
    ops_idx.push_back(static_cast<int>(p_.nodes.size()) - 1);
  }
  int n_out = 0;
  for (size_t q = ops_idx.size(); q-- > 0 && n_out < o_.max_outputs;) {
    Node &n = p_.nodes[static_cast<size_t>(ops_idx[q])];
    if (q + 1 == ops_idx.size() || coin(0.25)) {
      n.output = true;
      ++n_out;
    }
  }
  for (auto &n : p_.nodes)
    if (n.output) {
      if (tile_.size() < n.shape.size() || coin(0.3))
        tile_ = rand_tile(n.shape.size(), n.shape);
      n.out_tile = tile_;
    }
  return std::move(p_);
}

} // namespace

Program generate(uint64_t seed, const GenOptions &opts) { return Gen(seed, opts).run(); }

} // namespace prop
