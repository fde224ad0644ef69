// property_gen.h - Random small ptojit programs for the property suite (tests/e2e/
// property_test.cpp): a seeded generator of well-typed op DAGs over random shapes, dtypes and
// vec tiles (property_gen.cpp), and an independent model that predicts every value together with
// a per-element bound on how far a correct ptojit may be from the prediction
// (property_model.cpp). Shares no code with ptojit beyond pto::DataType, pto/half.h conversions
// and HostTensor (for I/O). The generator is data-aware: it evaluates each candidate op and keeps
// it only when its values stay finite and moderate (domains of log, sqrt, ...; no integer
// division by zero; no fp16 overflow) and at most 10% of them are undetermined.
//
// The evaluator's model (the docs' promises, ops.h / reduce_ops.h / shape_ops.h / matmul.h):
// - Floats are computed in double and rounded to the op's output dtype at every op (fp16/bf16
//   correctly rounded via half.h). For add, sub, mul, div, sqrt (and everything exact: casts,
//   max/min, rounding ops, movement) this IS ptojit's result bit for bit: ptojit computes
//   fp16/bf16 in fp32 and fp32 in fp32, and double rounding through a format of >= 2p+2 bits
//   is innocuous for those operations (fp32 24 >= 2*11+2; double 53 >= 2*24+2).
// - Every element carries `err`, a bound on |ptojit - prediction|: 0 means bit-exact (value
//   equality; the sign of a zero is not compared), +inf means undetermined (not compared).
//   Sources of err > 0, all in units u of the compute type (2^-24 for fp16/bf16/fp32, 2^-53
//   for double; 1 ULP = 2u):
//   * transcendentals and composite activations: ptojit's value is f(x (1 + ri u)) (1 + ro u)
//     with (ri, ro) from the table in property_model.cpp (SLEEF u10 is <= 1 ULP, glibc's float
//     functions <= 2-3 ULP, composites round several times), plus ro subnormal ULPs (below the
//     normal range the bound is absolute);
//   * accumulations whose order ptojit leaves open (sum, prod, mean, var, cumsum, cumprod,
//     matmul): n u sum|terms| (the classic bound for any order of n fp32 additions), 0 when
//     every partial sum is exactly representable (all terms on one grid, small total);
//     products whose partial products could overflow or underflow in some order are
//     undetermined;
//   * propagation of input errors: closed forms for + - * / and max/min; otherwise f sampled
//     over the input interval (both ends and midpoints), the deviation doubled;
//   * then rounding to the output dtype adds one ULP of that dtype (the two roundings may fall
//     on different sides).
//   A discontinuous op (floor, round, compares, float->int casts, argmax, where, logical ops,
//   fmod/floor_div) on an inexact input is exact when the input interval decides its result and
//   undetermined otherwise. Integers are exact (int64, wrapping as the dtype does).
#pragma once

#include "pto/dtype.h"
#include "pto/host_tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace prop {

/// Every op the generator draws (names as the DSL spells them).
enum class Op : uint8_t {
  Input, ///< a kernel parameter
  Full,
  Arange,
  // unary
  Neg,
  Abs,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Exp2,
  Expm1,
  Log2,
  Log10,
  Log1p,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Asinh,
  Acosh,
  Atanh,
  Erf,
  Erfc,
  Cbrt,
  Sigmoid,
  Softplus,
  Softsign,
  Elu,
  Gelu,
  GeluTanh,
  Lrelu,
  Relu,
  Relu6,
  Sign,
  Signbit,
  Ceil,
  Floor,
  Trunc,
  Round,
  IsFinite,
  IsNan,
  IsInf,
  LogicalNot,
  BitwiseNot,
  Square,
  Clone,
  Cast,
  // binary
  Add,
  Sub,
  Mul,
  Div,
  Maximum,
  Minimum,
  Pow,
  Hypot,
  Atan2,
  Copysign,
  Fmod,
  Remainder,
  FloorDiv,
  LogicalAnd,
  LogicalOr,
  LogicalXor,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  ShiftLeft,
  ShiftRight,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // selection
  Where,
  Clip,
  // reductions and scans
  Sum,
  Amax,
  Amin,
  Prod,
  Mean,
  Var,
  Argmax,
  Argmin,
  Cumsum,
  Cumprod,
  // shape and movement
  Reshape,
  Unsqueeze,
  Squeeze,
  Expand,
  Transpose,
  Permute,
  Concat,
  Split,
  Stack,
  Tile,
  Pad,
  Tril,
  Triu,
  View,
  Matmul,
};

/// The DSL name of `op` ("add", "cumsum").
const char *name(Op op);

/// A scalar operand, as the DSL takes it: a C++ int or double literal, or an Element of the
/// tensor's dtype (`typed`).
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_int = true;
  bool typed = false;
};

/// An operand: an earlier node, or a scalar (node == -1).
struct Arg {
  int node = -1;
  Scalar s;
};

struct Node {
  Op op = Op::Input;
  std::vector<Arg> args;
  pto::DataType dt = pto::DT_FP32; ///< result dtype (Cast: the target; Matmul: out_dtype)
  std::vector<int64_t> shape;      ///< result shape
  std::vector<int> axes;           ///< reduce axes / scan, concat, split, stack dim / perm /
                                   ///< transpose pair / squeeze dims / unsqueeze dim
  bool keepdim = false;
  bool axis_list = false;     ///< reduction called with a list of axes
  std::vector<int64_t> ints;  ///< reshape / expand target, tile reps, pad, view shape, split
                              ///< sizes (then ints2[0] is the piece taken)
  std::vector<int64_t> ints2; ///< view offsets, split piece
  int64_t diag = 0;           ///< tril / triu diagonal
  double attr = 0;            ///< elu alpha, lrelu slope, var correction, full / pad value,
  double attr2 = 0;           ///< arange start (attr) and step (attr2)
  bool a_trans = false, b_trans = false, relu = false, split_k = false; ///< matmul
  std::vector<int64_t> tile;     ///< the vec tile current when the op is traced
  std::vector<int64_t> cube;     ///< matmul: m0, m1, k0, k1, n0, n1
  bool output = false;           ///< assembled into a kernel output parameter
  std::vector<int64_t> out_tile; ///< the vec tile of that assemble
};

/// The predicted value of a node.
struct Val {
  pto::DataType dt = pto::DT_FP32;
  std::vector<int64_t> shape;
  std::vector<double> f;   ///< floating dtypes: the value, rounded to dt
  std::vector<int64_t> i;  ///< integer dtypes and bool
  std::vector<double> err; ///< per element: 0 exact, > 0 tolerance, +inf undetermined
  int64_t numel() const { return static_cast<int64_t>(err.size()); }
};

struct Program {
  uint64_t seed = 0;
  std::vector<Node> nodes;
  std::vector<Val> vals; ///< vals[k] predicts nodes[k]
  /// Indices of the Input nodes (kernel parameters, in order) and of the output nodes.
  std::vector<int> inputs() const;
  std::vector<int> outputs() const;
};

struct GenOptions {
  int min_ops = 2, max_ops = 8;
  int max_inputs = 3, max_outputs = 3;
};

/// A random well-typed program drawn from `seed` (deterministic), with every node evaluated.
Program generate(uint64_t seed, const GenOptions &opts = {});

/// Evaluates node `k` of `p` from the values of the nodes before it (the independent model).
/// Returns false when the op cannot run on these values (an integer division by zero).
bool evaluate(const Program &p, size_t k, Val &out);

/// A readable listing of the program (one op per line, with tiles and outputs), for failures.
std::string describe(const Program &p);

/// The data of Input node `k` as a HostTensor.
pto::HostTensor to_host(const Val &v);

/// Per-element comparison counts.
struct CompareStats {
  int64_t exact = 0, within = 0, undetermined = 0;
};

/// "" when `got` matches `want` (exact where err == 0, within err where finite, anything where
/// undetermined); otherwise a message with the count of bad elements and the worst one.
std::string compare(const Val &want, const pto::HostTensor &got, CompareStats &stats);

/// Facts shared by the generator (property_gen.cpp) and the model (property_model.cpp).
namespace detail {
using Shape = std::vector<int64_t>;
int bits_of(pto::DataType dt);
/// `v` correctly rounded to the floating dtype `dt` (nearest even).
double round_dt(pto::DataType dt, double v);
int64_t int_lo(pto::DataType dt); ///< the smallest value of an integer dtype
int64_t int_hi(pto::DataType dt); ///< the largest
int64_t numel(const Shape &s);
bool broadcastable(const Shape &a, const Shape &b);
Shape broadcast(const Shape &a, const Shape &b); ///< numpy, right-aligned
Val make_val(pto::DataType dt, const Shape &s);  ///< zeros, exact
bool bool_result(Op op);                         ///< the op's result is DT_BOOL
/// The result shape of a reduction of `s` over the sorted `axes` (reduce_ops.h).
Shape reduced_shape(const Shape &s, const std::vector<int> &axes, bool keepdim);
/// A reduction node's axes, normalized to [0, rank) and sorted; all axes for an empty list.
std::vector<int> norm_axes(const Node &n, size_t rank);
std::string shape_str(const Shape &s);
} // namespace detail

} // namespace prop
