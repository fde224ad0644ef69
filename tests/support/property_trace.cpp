// property_trace.cpp - See property_trace.h: the DSL call of every generator op.
#include "support/property_trace.h"

#include "pto/pto.h"

#include <stdexcept>
#include <string>

namespace prop {

namespace {

std::vector<pto::SymbolicScalar> sym(const std::vector<int64_t> &v) { return {v.begin(), v.end()}; }

pto::Operand operand(const prop::Arg &a, const std::vector<pto::Tensor> &t, pto::DataType dt) {
  if (a.node >= 0)
    return t[static_cast<size_t>(a.node)];
  if (a.s.typed)
    return a.s.is_int ? pto::Operand(pto::Element(dt, a.s.i))
                      : pto::Operand(pto::Element(dt, a.s.f));
  return a.s.is_int ? pto::Operand(a.s.i) : pto::Operand(a.s.f);
}

} // namespace

/// The DSL call for node `n` (its operands already traced into `t`).
pto::Tensor trace_op(const Program &p, const Node &n, const std::vector<pto::Tensor> &t) {
  auto in = [&](size_t q) { return t[static_cast<size_t>(n.args[q].node)]; };
  // The dtype scalars take (the first tensor operand's).
  pto::DataType sdt = n.dt;
  for (size_t q = n.op == Op::Where ? 1 : 0; q < n.args.size(); ++q)
    if (n.args[q].node >= 0) {
      sdt = p.nodes[static_cast<size_t>(n.args[q].node)].dt;
      break;
    }
  auto arg = [&](size_t q) { return operand(n.args[q], t, sdt); };
  const pto::ReduceOptions ro{.keepdim = n.keepdim};
  switch (n.op) {
  case Op::Input:
    break;
  case Op::Full:
    return pto::full(sym(n.shape), n.attr, n.dt);
  case Op::Arange: {
    const auto len = static_cast<int64_t>(n.shape[0]);
    if (n.dt == pto::DT_INT32) {
      const auto start = static_cast<int64_t>(n.attr), step = static_cast<int64_t>(n.attr2);
      return pto::arange(start, start + len * step, step);
    }
    return pto::arange(n.attr, n.attr + (static_cast<double>(len) - 0.5) * n.attr2, n.attr2);
  }
  case Op::Neg:
    return pto::neg(in(0));
  case Op::Abs:
    return pto::abs(in(0));
  case Op::Exp:
    return pto::exp(in(0));
  case Op::Log:
    return pto::log(in(0));
  case Op::Sqrt:
    return pto::sqrt(in(0));
  case Op::Rsqrt:
    return pto::rsqrt(in(0));
  case Op::Reciprocal:
    return pto::reciprocal(in(0));
  case Op::Exp2:
    return pto::exp2(in(0));
  case Op::Expm1:
    return pto::expm1(in(0));
  case Op::Log2:
    return pto::log2(in(0));
  case Op::Log10:
    return pto::log10(in(0));
  case Op::Log1p:
    return pto::log1p(in(0));
  case Op::Sin:
    return pto::sin(in(0));
  case Op::Cos:
    return pto::cos(in(0));
  case Op::Tan:
    return pto::tan(in(0));
  case Op::Asin:
    return pto::asin(in(0));
  case Op::Acos:
    return pto::acos(in(0));
  case Op::Atan:
    return pto::atan(in(0));
  case Op::Sinh:
    return pto::sinh(in(0));
  case Op::Cosh:
    return pto::cosh(in(0));
  case Op::Tanh:
    return pto::tanh(in(0));
  case Op::Asinh:
    return pto::asinh(in(0));
  case Op::Acosh:
    return pto::acosh(in(0));
  case Op::Atanh:
    return pto::atanh(in(0));
  case Op::Erf:
    return pto::erf(in(0));
  case Op::Erfc:
    return pto::erfc(in(0));
  case Op::Cbrt:
    return pto::cbrt(in(0));
  case Op::Sigmoid:
    return pto::sigmoid(in(0));
  case Op::Softplus:
    return pto::softplus(in(0));
  case Op::Softsign:
    return pto::softsign(in(0));
  case Op::Elu:
    return pto::elu(in(0), n.attr);
  case Op::Gelu:
    return pto::gelu(in(0));
  case Op::GeluTanh:
    return pto::gelu_tanh(in(0));
  case Op::Lrelu:
    return pto::lrelu(in(0), n.attr);
  case Op::Relu:
    return pto::relu(in(0));
  case Op::Relu6:
    return pto::relu6(in(0));
  case Op::Sign:
    return pto::sign(in(0));
  case Op::Signbit:
    return pto::signbit(in(0));
  case Op::Ceil:
    return pto::ceil(in(0));
  case Op::Floor:
    return pto::floor(in(0));
  case Op::Trunc:
    return pto::trunc(in(0));
  case Op::Round:
    return pto::round(in(0));
  case Op::IsFinite:
    return pto::isfinite(in(0));
  case Op::IsNan:
    return pto::isnan(in(0));
  case Op::IsInf:
    return pto::isinf(in(0));
  case Op::LogicalNot:
    return pto::logical_not(in(0));
  case Op::BitwiseNot:
    return pto::bitwise_not(in(0));
  case Op::Square:
    return pto::square(in(0));
  case Op::Clone:
    return pto::clone(in(0));
  case Op::Cast:
    return pto::cast(in(0), n.dt);
  case Op::Add:
    return pto::add(arg(0), arg(1));
  case Op::Sub:
    return pto::sub(arg(0), arg(1));
  case Op::Mul:
    return pto::mul(arg(0), arg(1));
  case Op::Div:
    return pto::div(arg(0), arg(1));
  case Op::Maximum:
    return pto::maximum(arg(0), arg(1));
  case Op::Minimum:
    return pto::minimum(arg(0), arg(1));
  case Op::Pow:
    return pto::pow(arg(0), arg(1));
  case Op::Hypot:
    return pto::hypot(arg(0), arg(1));
  case Op::Atan2:
    return pto::atan2(arg(0), arg(1));
  case Op::Copysign:
    return pto::copysign(arg(0), arg(1));
  case Op::Fmod:
    return pto::fmod(arg(0), arg(1));
  case Op::Remainder:
    return pto::remainder(arg(0), arg(1));
  case Op::FloorDiv:
    return pto::floor_div(arg(0), arg(1));
  case Op::LogicalAnd:
    return pto::logical_and(arg(0), arg(1));
  case Op::LogicalOr:
    return pto::logical_or(arg(0), arg(1));
  case Op::LogicalXor:
    return pto::logical_xor(arg(0), arg(1));
  case Op::BitwiseAnd:
    return pto::bitwise_and(arg(0), arg(1));
  case Op::BitwiseOr:
    return pto::bitwise_or(arg(0), arg(1));
  case Op::BitwiseXor:
    return pto::bitwise_xor(arg(0), arg(1));
  case Op::ShiftLeft:
    return pto::bitwise_left_shift(arg(0), arg(1));
  case Op::ShiftRight:
    return pto::bitwise_right_shift(arg(0), arg(1));
  case Op::Eq:
    return pto::eq(arg(0), arg(1));
  case Op::Ne:
    return pto::ne(arg(0), arg(1));
  case Op::Lt:
    return pto::lt(arg(0), arg(1));
  case Op::Le:
    return pto::le(arg(0), arg(1));
  case Op::Gt:
    return pto::gt(arg(0), arg(1));
  case Op::Ge:
    return pto::ge(arg(0), arg(1));
  case Op::Where:
    return pto::where(in(0), arg(1), arg(2));
  case Op::Clip:
    return pto::clip(in(0), arg(1), arg(2));
  case Op::Sum:
    return n.axis_list ? pto::sum(in(0), n.axes, ro) : pto::sum(in(0), n.axes[0], ro);
  case Op::Amax:
    return n.axis_list ? pto::amax(in(0), n.axes, ro) : pto::amax(in(0), n.axes[0], ro);
  case Op::Amin:
    return n.axis_list ? pto::amin(in(0), n.axes, ro) : pto::amin(in(0), n.axes[0], ro);
  case Op::Prod:
    return n.axis_list ? pto::prod(in(0), n.axes, ro) : pto::prod(in(0), n.axes[0], ro);
  case Op::Mean:
    return n.axis_list ? pto::mean(in(0), n.axes, ro) : pto::mean(in(0), n.axes[0], ro);
  case Op::Var: {
    const pto::VarOptions vo{.correction = n.attr, .keepdim = n.keepdim};
    return n.axis_list ? pto::var(in(0), n.axes, vo) : pto::var(in(0), n.axes[0], vo);
  }
  case Op::Argmax:
    return pto::argmax(in(0), n.axes[0], ro);
  case Op::Argmin:
    return pto::argmin(in(0), n.axes[0], ro);
  case Op::Cumsum:
    return pto::cumsum(in(0), n.axes[0]);
  case Op::Cumprod:
    return pto::cumprod(in(0), n.axes[0]);
  case Op::Reshape:
    return pto::reshape(in(0), sym(n.ints));
  case Op::Unsqueeze:
    return pto::unsqueeze(in(0), n.axes[0]);
  case Op::Squeeze:
    return pto::squeeze(in(0), n.axes);
  case Op::Expand:
    return pto::expand(in(0), sym(n.ints));
  case Op::Transpose:
    return pto::transpose(in(0), n.axes[0], n.axes[1]);
  case Op::Permute:
    return pto::permute(in(0), n.axes);
  case Op::Concat:
  case Op::Stack: {
    std::vector<pto::Tensor> xs;
    for (size_t q = 0; q < n.args.size(); ++q)
      xs.push_back(in(q));
    return n.op == Op::Concat ? pto::concat(xs, n.axes[0]) : pto::stack(xs, n.axes[0]);
  }
  case Op::Split: {
    auto parts = n.ints.size() == 1 ? pto::split(in(0), n.ints[0], n.axes[0])
                                    : pto::split(in(0), n.ints, n.axes[0]);
    if (static_cast<size_t>(n.ints2[0]) >= parts.size())
      throw Unexpected("split returned " + std::to_string(parts.size()) + " pieces, piece " +
                       std::to_string(n.ints2[0]) + " was expected");
    return parts[static_cast<size_t>(n.ints2[0])];
  }
  case Op::Tile:
    return pto::tile(in(0), n.ints);
  case Op::Pad:
    return pto::pad(in(0), n.ints, n.attr);
  case Op::Tril:
    return pto::tril(in(0), n.diag);
  case Op::Triu:
    return pto::triu(in(0), n.diag);
  case Op::View:
    return pto::view(in(0), n.ints, sym(n.ints2));
  case Op::Matmul: {
    pto::set_cube_tile_shapes({n.cube[0], n.cube[1]}, {n.cube[2], n.cube[3]},
                              {n.cube[4], n.cube[5]}, {.enable_split_k = n.split_k});
    pto::MatmulOptions mo{.a_trans = n.a_trans, .b_trans = n.b_trans, .relu = n.relu};
    if (n.args.size() > 2)
      mo.bias = in(2);
    return pto::matmul(in(0), in(1), n.dt, mo);
  }
  }
  throw Unexpected(std::string("no DSL call for ") + prop::name(n.op));
}

/// Traces program `p` into the current kernel: its inputs are params[next...], then one output
/// parameter per output node.
void trace_program(const Program &p, const std::vector<pto::Tensor> &params, size_t &next) {
  std::vector<pto::Tensor> t(p.nodes.size());
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const Node &n = p.nodes[k];
    if (n.op == Op::Input) {
      t[k] = params[next++];
      continue;
    }
    if (!n.tile.empty() && n.tile != pto::get_vec_tile_shapes())
      pto::set_vec_tile_shapes(n.tile);
    t[k] = trace_op(p, n, t);
  }
  for (size_t k = 0; k < p.nodes.size(); ++k)
    if (p.nodes[k].output) {
      pto::set_vec_tile_shapes(p.nodes[k].out_tile);
      pto::assemble(t[k], std::vector<pto::SymbolicScalar>(p.nodes[k].shape.size(), 0),
                    params[next++]);
    }
}

} // namespace prop
