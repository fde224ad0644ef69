// property_test.cpp - The property suite (issue 3): random small programs (support/
// property_gen.h: chains and DAGs of 2-8 ops over random shapes, dtypes and vec tiles), each run
// JIT-compiled and in the interpreter and compared with the independent model, element by
// element: bit-exact where the model says the docs promise it, within the model's per-element
// bound elsewhere (transcendentals, accumulation order), not at all where an inexact input makes
// a discontinuous op undecidable. JIT == interpreter follows wherever the bound is 0.
//
// Programs share kernels (16 per kernel): program k's inputs and outputs are its own kernel
// parameters, its ops are traced after program k-1's. The run time is the JIT's compile time,
// which grows with the number of ops (~15-20 ms per op on the 2-core CI class of machine), so
// the generator keeps most programs short and of rank 2-3. A failing program is rerun alone and
// cut to its shortest failing prefix, and the failure names its seed and a one-line repro.
//
// Environment: PTO_PROPERTY_SEED (first program seed, default 1), PTO_PROPERTY_COUNT (programs,
// default 2000), PTO_PROPERTY_PER_KERNEL (programs per kernel, default 16). A soak of the model
// and the interpreter alone: PTO_TEST_INTERPRET_ONLY=1 PTO_PROPERTY_COUNT=100000 (~30 s).
#include "pto/pto.h"

#include "support/property_gen.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using prop::Node;
using prop::Op;
using prop::Program;

constexpr size_t kSlots = 128; ///< tensor parameters of every kernel (unused ones are dummies)

uint64_t env_u64(const char *name, uint64_t def) {
  const char *e = std::getenv(name);
  return e && *e ? std::strtoull(e, nullptr, 10) : def;
}

std::vector<pto::SymbolicScalar> sym(const std::vector<int64_t> &v) { return {v.begin(), v.end()}; }

pto::Operand operand(const prop::Arg &a, const std::vector<pto::Tensor> &t, pto::DataType dt) {
  if (a.node >= 0)
    return t[static_cast<size_t>(a.node)];
  if (a.s.typed)
    return a.s.is_int ? pto::Operand(pto::Element(dt, a.s.i))
                      : pto::Operand(pto::Element(dt, a.s.f));
  return a.s.is_int ? pto::Operand(a.s.i) : pto::Operand(a.s.f);
}

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
  throw std::logic_error(std::string("property_test: no DSL call for ") + prop::name(n.op));
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

/// The parameters of a batch: per program its inputs, then its outputs (pre-filled with a
/// sentinel so that an element never written shows up).
std::vector<pto::HostTensor> make_params(const std::vector<Program> &progs) {
  std::vector<pto::HostTensor> hs;
  for (const auto &p : progs) {
    for (int k : p.inputs())
      hs.push_back(prop::to_host(p.vals[static_cast<size_t>(k)]));
    for (int k : p.outputs()) {
      const auto &v = p.vals[static_cast<size_t>(k)];
      pto::HostTensor out(v.dt, v.shape);
      if (v.dt == pto::DT_BOOL) // neither true nor false
        std::memset(out.data(), 2, static_cast<size_t>(out.size_bytes()));
      else
        out.fill(77);
      hs.push_back(out);
    }
  }
  while (hs.size() < kSlots)
    hs.emplace_back(pto::DT_FP32, std::vector<int64_t>{1});
  return hs;
}

size_t n_params(const Program &p) { return p.inputs().size() + p.outputs().size(); }

/// One result of running a batch in one mode: "" or what went wrong, per program.
struct BatchResult {
  std::string error;                 ///< a thrown error (trace, compile or run): whole batch
  std::vector<std::string> mismatch; ///< per program: "" or the failing outputs
};

template <size_t... I>
void call_kernel(auto &kernel, std::vector<pto::HostTensor> &hs, std::index_sequence<I...>) {
  kernel(hs[I]...);
}

BatchResult run_batch(const std::vector<Program> &progs, pto::RunMode mode,
                      prop::CompareStats &stats) {
  BatchResult res;
  res.mismatch.resize(progs.size());
  auto hs = make_params(progs);
  auto body = [&](const std::vector<pto::Tensor> &params) {
    size_t next = 0;
    for (const auto &p : progs)
      trace_program(p, params, next);
  };
  auto kernel = pto::jit(
      "property", [&](auto... ts) { body(std::vector<pto::Tensor>{ts...}); }, support::opts(mode));
  try {
    call_kernel(kernel, hs, std::make_index_sequence<kSlots>{});
  } catch (const std::exception &e) {
    res.error = e.what();
    return res;
  }
  size_t next = 0;
  for (size_t q = 0; q < progs.size(); ++q) {
    const Program &p = progs[q];
    next += p.inputs().size();
    for (int k : p.outputs()) {
      std::string m = prop::compare(p.vals[static_cast<size_t>(k)], hs[next++], stats);
      if (!m.empty())
        res.mismatch[q] += "output %" + std::to_string(k) + ": " + m + "\n";
    }
  }
  return res;
}

/// The smallest prefix of `p` whose last node, as the only output, still fails in `mode`: the
/// op where the failure starts.
Program minimize(const Program &p, pto::RunMode mode) {
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    if (p.nodes[k].op == Op::Input)
      continue;
    Program q = p;
    q.nodes.resize(k + 1);
    q.vals.resize(k + 1);
    for (auto &n : q.nodes)
      n.output = false;
    q.nodes[k].output = true;
    if (q.nodes[k].out_tile.size() < q.nodes[k].shape.size())
      q.nodes[k].out_tile = std::vector<int64_t>(q.nodes[k].shape.size(), 8);
    prop::CompareStats ignored;
    BatchResult r = run_batch({q}, mode, ignored);
    if (!r.error.empty() || !r.mismatch[0].empty())
      return q;
  }
  return p;
}

std::string repro(uint64_t seed, uint64_t count) {
  return "PTO_PROPERTY_SEED=" + std::to_string(seed) +
         " PTO_PROPERTY_COUNT=" + std::to_string(count) + " ./test_e2e -tc=\"property*\"";
}

} // namespace

TEST_CASE("property: random programs agree in JIT, interpreter and an independent model" *
          doctest::test_suite("slow")) {
  const uint64_t seed0 = env_u64("PTO_PROPERTY_SEED", 1);
  const uint64_t count = env_u64("PTO_PROPERTY_COUNT", 2000);
  const uint64_t per_kernel = std::max<uint64_t>(1, env_u64("PTO_PROPERTY_PER_KERNEL", 16));
  const auto t0 = std::chrono::steady_clock::now();
  prop::CompareStats stats;
  uint64_t programs = 0, ops = 0, kernels = 0, failures = 0;
  for (uint64_t first = 0; first < count;) {
    // A batch: consecutive seeds while they fit in the kernel's parameters.
    std::vector<Program> batch;
    size_t used = 0;
    while (first + batch.size() < count && batch.size() < per_kernel) {
      Program p = prop::generate(seed0 + first + batch.size());
      if (used + n_params(p) > kSlots)
        break;
      used += n_params(p);
      batch.push_back(std::move(p));
    }
    const uint64_t batch_seed = seed0 + first;
    first += batch.size();
    ++kernels;
    for (const auto &p : batch) {
      ++programs;
      ops += p.nodes.size() - p.inputs().size();
    }
    for (auto mode : support::run_modes()) {
      BatchResult r = run_batch(batch, mode, stats);
      bool reported = false;
      for (size_t q = 0; q < batch.size(); ++q) {
        if (r.error.empty() && r.mismatch[q].empty())
          continue;
        // Report the failing program alone when it fails alone, minimized.
        const Program &p = batch[q];
        prop::CompareStats ignored;
        BatchResult alone = run_batch({p}, mode, ignored);
        const bool fails_alone = !alone.error.empty() || !alone.mismatch[0].empty();
        if (!r.error.empty() && !fails_alone)
          continue; // the batch error may come from another program
        ++failures;
        reported = true;
        std::ostringstream os;
        os << support::mode_name(mode) << ": program seed " << p.seed << " fails"
           << (fails_alone ? "" : " only together with its batch") << ":\n"
           << (r.error.empty() ? r.mismatch[q] : alone.error + "\n") << prop::describe(p);
        if (fails_alone)
          os << "smallest failing prefix:\n" << prop::describe(minimize(p, mode));
        os << "repro: " << (fails_alone ? repro(p.seed, 1) : repro(batch_seed, batch.size()))
           << "\n";
        FAIL_CHECK(os.str());
      }
      if (!r.error.empty() && !reported) {
        ++failures;
        FAIL_CHECK(std::string(support::mode_name(mode))
                   << ": a batch of " << batch.size() << " programs fails, none alone: " << r.error
                   << "\nrepro: " << repro(batch_seed, batch.size()));
      }
    }
    if (failures >= 5) {
      FAIL_CHECK("stopping after 5 failing programs");
      break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t total = stats.exact + stats.within + stats.undetermined;
  MESSAGE(programs << " programs (" << ops << " ops) in " << kernels << " kernels x "
                   << support::run_modes().size() << " modes, " << secs
                   << " s; elements: " << stats.exact << " exact, " << stats.within
                   << " within a bound, " << stats.undetermined << " undetermined");
  CHECK(programs == count);
  if (count >= 100) { // the comparison must mean something: nearly all decided, most exactly
    CHECK(stats.undetermined * 20 <= total);
    CHECK(stats.exact * 2 >= total);
  }
}
