// op_registry.cpp - The rows of the op registry (op_registry.h), in doc order. MindSpore names are
// operator primitives (`Exp`) or, for ops only MindSpore 2.x's functional API has, `ops.name`.
// ULP figures are copied from tests/codegen/ulp_sweep_test.cpp's output, which fails when they
// drift; the other fields are checked by tests/dsl/op_registry_test.cpp.
#include "op_registry.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace pto::registry {

namespace {

// Headers.
constexpr std::string_view kOpsH = "pto/ops.h";
constexpr std::string_view kReduceH = "pto/reduce_ops.h";
constexpr std::string_view kShapeH = "pto/shape_ops.h";
constexpr std::string_view kMatmulH = "pto/matmul.h";
constexpr std::string_view kIndexH = "pto/index_ops.h";
constexpr std::string_view kSortH = "pto/sort_ops.h";
constexpr std::string_view kNnH = "pto/nn_ops.h";
constexpr std::string_view kTileH = "pto/tile.h";
constexpr std::string_view kControlH = "pto/control.h";
constexpr std::string_view kTensorH = "pto/tensor.h";
constexpr std::string_view kDistH = "pto/distributed.h";
constexpr std::string_view kCollH = "pto/collectives.h";

// Dtype lists, as the headers state them.
constexpr std::string_view kFloats = "fp16, bf16, fp32, fp64";
constexpr std::string_view kNumeric = "int8-int64, uint8, fp16, bf16, fp32, fp64";
constexpr std::string_view kSigned = "int8-int64, fp16, bf16, fp32, fp64";
constexpr std::string_view kAll = "every dtype, bool too";
constexpr std::string_view kIntBool = "int8-int64, uint8, bool";
constexpr std::string_view kShmemTypes = "int8-int64, fp16, bf16, fp32, fp64";

// Test files.
constexpr std::string_view kElemT = "tests/codegen/elementwise_test.cpp";
constexpr std::string_view kSignT = "tests/codegen/sign_edges_test.cpp";
constexpr std::string_view kOpsT = "tests/codegen/ops_test.cpp";
constexpr std::string_view kUlpT = "tests/codegen/ulp_sweep_test.cpp";
constexpr std::string_view kReduceT = "tests/codegen/reduce_ops_test.cpp";
constexpr std::string_view kShapeT = "tests/codegen/shape_ops_test.cpp";
constexpr std::string_view kMatmulT = "tests/codegen/matmul_test.cpp";
constexpr std::string_view kIndexT = "tests/codegen/index_ops_test.cpp";
constexpr std::string_view kSortT = "tests/codegen/sort_ops_test.cpp";
constexpr std::string_view kNnT = "tests/codegen/nn_ops_test.cpp";
constexpr std::string_view kControlT = "tests/e2e/control_flow_test.cpp";
constexpr std::string_view kPropertyT = "tests/support/property_trace.cpp";
constexpr std::string_view kSymbolicT = "tests/dsl/symbolic_test.cpp";
constexpr std::string_view kErrorsT = "tests/dsl/errors_test.cpp";
constexpr std::string_view kDistT = "tests/e2e/distributed_test.cpp";
constexpr std::string_view kPipeT = "tests/e2e/pipelining_test.cpp";
constexpr std::string_view kRegressT = "tests/e2e/regressions_test.cpp";
constexpr std::string_view kCollT = "tests/e2e/collectives_test.cpp";
constexpr std::string_view kShmemT = "tests/e2e/shmem_primitives_test.cpp";
constexpr std::string_view kGoldenT = "tests/e2e/golden_st_test.cpp";
constexpr std::string_view kSyncT = "tests/e2e/shmem_sync_test.cpp";
constexpr std::string_view kLitmusT = "tests/e2e/litmus_test.cpp";
constexpr std::string_view kCastsT = "tests/codegen/hardening_casts_test.cpp";
constexpr std::string_view kZerosT = "tests/codegen/hardening_zeros_test.cpp";
constexpr std::string_view kReuseS = "samples/allreduce_add_allreduce.cpp";
constexpr std::string_view kCompatT = "tests/pypto_ports/compat_spellings_test.cpp";

using K = Kind;
template <class... T> std::vector<std::string_view> tested_in(T... files) { return {files...}; }
constexpr Ulp kNone{};

/// The max ULP error per dtype (fp32, fp64, fp16, bf16) that tests/codegen/ulp_sweep_test.cpp
/// measures, at round_figure's precision; the sweep fails when a figure here differs from its
/// measurement. Each entry fills the ULP figures of the first row of its function (an overload
/// in a later header, such as round(x, decimals), is not swept). inf: a finite result came out
/// as an infinity or NaN (or the reverse); the row's notes and docs/ops.md say where.
const std::vector<std::pair<std::string_view, Ulp>> kMeasuredUlp = {
    {"pto::neg", {0, 0, 0, 0}},
    {"pto::abs", {0, 0, 0, 0}},
    {"pto::square", {0.50, 0.50, 0.50, 0.50}},
    {"pto::sqrt", {0.50, 0.50, 0.50, 0.50}},
    {"pto::reciprocal", {0.50, 0.50, 0.50, 0.50}},
    {"pto::rsqrt", {1.47, 1.46, 0.50, 0.50}},
    {"pto::exp", {0.96, 0.81, 0.50, 0.50}},
    {"pto::exp2", {0.80, 0.82, 0.50, 0.50}},
    {"pto::expm1", {1.00, 0.72, 0.50, 0.50}},
    {"pto::log", {0.60, 0.72, 0.50, 0.50}},
    {"pto::log2", {0.58, 0.79, 0.50, 0.50}},
    {"pto::log10", {0.57, 0.74, 0.50, 0.50}},
    {"pto::log1p", {1.00, 1.00, 0.50, 0.50}},
    {"pto::sin", {0.79, 0.71, 0.50, 0.50}},
    {"pto::cos", {0.80, 0.70, 0.50, 0.50}},
    {"pto::tan", {0.92, 1.00, 0.50, 0.50}},
    {"pto::asin", {0.70, 0.81, 0.50, 0.50}},
    {"pto::acos", {0.63, 0.73, 0.50, 0.50}},
    {"pto::atan", {0.81, 0.75, 0.50, 0.50}},
    {"pto::sinh", {1.00, 1.23, 0.50, 0.50}},
    {"pto::cosh", {0.50, 0.97, 0.50, 0.50}},
    {"pto::tanh", {1.00, 1.00, 0.50, 0.50}},
    {"pto::asinh", {1.00, 1.00, 0.50, 0.50}},
    {"pto::acosh", {0.87, 0.98, 0.50, 0.50}},
    {"pto::atanh", {1.00, 1.00, 0.50, 0.50}},
    {"pto::erf", {1.02, 0.81, 0.50, 0.50}},
    {"pto::erfc", {1.16, 1.19, 0.50, 0.50}},
    {"pto::cbrt", {0.50, 0.53, 0.50, 0.50}},
    {"pto::sigmoid", {2.11, 1.89, 0.50, 0.50}},
    {"pto::softplus", {1.50, 1.40, 0.50, 0.50}},
    {"pto::softsign", {1.47, 1.48, 0.50, 0.50}},
    {"pto::elu", {1.00, 0.57, 0.50, 0.50}},
    {"pto::gelu", {6.84, 18, 0.50, 0.50}},
    {"pto::gelu_tanh", {178, 399, 0.50, 0.50}},
    {"pto::lrelu", {0.84, 0.68, 0.50, 0.50}},
    {"pto::relu", {0, 0, 0, 0}},
    {"pto::relu6", {0, 0, 0, 0}},
    {"pto::sign", {0, 0, 0, 0}},
    {"pto::ceil", {0, 0, 0, 0}},
    {"pto::floor", {0, 0, 0, 0}},
    {"pto::trunc", {0, 0, 0, 0}},
    {"pto::bessel_i0e", {0.50, 0.50, 0.50, 0.50}},
    {"pto::bessel_i1e", {0.50, 0.50, 0.50, 0.50}},
    {"pto::round", {0, 0, 0, 0}},
    {"pto::add", {0.50, 0.50, 0.50, 0.50}},
    {"pto::sub", {0.50, 0.50, 0.50, 0.50}},
    {"pto::mul", {0.50, 0.50, 0.50, 0.50}},
    {"pto::div", {0.50, 0.50, 0.50, 0.50}},
    {"pto::maximum", {0, 0, 0, 0}},
    {"pto::minimum", {0, 0, 0, 0}},
    {"pto::copysign", {0, 0, 0, 0}},
    {"pto::pow", {0.72, 0.61, 0.50, 0.50}},
    {"pto::hypot", {0.90, 0.85, 0.50, 0.50}},
    {"pto::atan2", {0.89, 0.81, 0.50, 0.50}},
    {"pto::fmod", {0, 0, 0, 0}},
    {"pto::remainder", {0.50, 0.50, 0.50, 0.50}},
    {"pto::floor_div", {2.00, 1.00, 0.50, 0.50}},
    {"pto::div_no_nan", {0.50, 0.50, 0.50, 0.50}},
    {"pto::floor_mod", {0.50, 0.50, 0.50, 0.50}},
    {"pto::mod", {0, 0, 0, 0}},
    {"pto::expand_exp_dif", {64.4, 114, 0.50, 0.50}},
};

std::vector<OpRow> make_rows() {
  std::vector<OpRow> rows = {
      // ---- elementwise arithmetic, math, rounding, conversion -------------------------------
      {"pto::add", kOpsH, K::Elementwise, "add", "Add, TensorAdd", kNumeric,
       tested_in(kOpsT, kUlpT), kNone, "also `a + b`; PyPTO lacks int8, int64, uint8 and fp64"},
      {"pto::sub", kOpsH, K::Elementwise, "sub", "Sub", kNumeric, tested_in(kOpsT, kUlpT), kNone,
       "also `a - b`"},
      {"pto::mul", kOpsH, K::Elementwise, "mul", "Mul", kNumeric, tested_in(kOpsT, kUlpT), kNone,
       "also `a * b`"},
      {"pto::div", kOpsH, K::Elementwise, "div", "RealDiv, Div", kNumeric, tested_in(kOpsT, kUlpT),
       kNone,
       "also `a / b`; ints truncate toward zero (PyPTO computes them through fp32, PyTorch `/` "
       "returns floats) and a zero divisor fails the call with RuntimeError; no precision_type"},
      {"pto::maximum", kOpsH, K::Elementwise, "maximum", "Maximum", kNumeric,
       tested_in(kOpsT, kUlpT), kNone, "NaN propagates (PyTorch); -0 < +0 (IEEE 754 maximum)"},
      {"pto::minimum", kOpsH, K::Elementwise, "minimum", "Minimum", kNumeric,
       tested_in(kOpsT, kUlpT), kNone, "NaN propagates (PyTorch); -0 < +0 (IEEE 754 minimum)"},
      {"pto::neg", kOpsH, K::Elementwise, "neg", "Neg", kSigned, tested_in(kOpsT, kUlpT), kNone,
       "also unary `-x`; ints too"},
      {"pto::abs", kOpsH, K::Elementwise, "abs", "Abs", kSigned, tested_in(kOpsT, kUlpT), kNone,
       "ints too (PyPTO: 950 only)"},
      {"pto::square", kOpsH, K::Elementwise, "", "Square", kNumeric, tested_in(kElemT, kUlpT),
       kNone, "ints wrap"},
      {"pto::sqrt", kOpsH, K::Elementwise, "sqrt", "Sqrt", kFloats, tested_in(kOpsT, kUlpT), kNone,
       "correctly rounded; no precision_type"},
      {"pto::rsqrt", kOpsH, K::Elementwise, "rsqrt", "Rsqrt", kFloats, tested_in(kOpsT, kUlpT),
       kNone, "1 / sqrt(x), two roundings; no precision_type"},
      {"pto::reciprocal", kOpsH, K::Elementwise, "reciprocal", "Reciprocal, Inv", kFloats,
       tested_in(kOpsT, kUlpT), kNone, "IEEE 1 / x"},
      {"pto::exp", kOpsH, K::Elementwise, "exp", "Exp", kFloats, tested_in(kOpsT, kUlpT), kNone,
       "SLEEF u10, finite up to ln DBL_MAX (SLEEF's fp64 overflows from 709.78271115; ptojit "
       "computes e^x0 (1 + expm1(x - x0)) there); no precision_type"},
      {"pto::exp2", kOpsH, K::Elementwise, "exp2", "ops.exp2", kFloats, tested_in(kElemT, kUlpT),
       kNone, "floats only (PyPTO also takes ints)"},
      {"pto::expm1", kOpsH, K::Elementwise, "expm1", "Expm1", kFloats, tested_in(kElemT, kUlpT),
       kNone, "floats only (PyPTO also takes int16/int32)"},
      {"pto::log", kOpsH, K::Elementwise, "log", "Log", kFloats, tested_in(kOpsT, kUlpT), kNone,
       "no precision_type"},
      {"pto::log2", kOpsH, K::Elementwise, "log2", "ops.log2", kFloats, tested_in(kElemT, kUlpT),
       kNone, ""},
      {"pto::log10", kOpsH, K::Elementwise, "log10", "ops.log10", kFloats, tested_in(kElemT, kUlpT),
       kNone, ""},
      {"pto::log1p", kOpsH, K::Elementwise, "log1p", "Log1p", kFloats, tested_in(kElemT, kUlpT),
       kNone, "log(x) above 1e18 (SLEEF's log1p overflows above 1e38 / 1e307)"},
      {"pto::sin", kOpsH, K::Elementwise, "sin", "Sin", kFloats, tested_in(kElemT, kUlpT), kNone,
       "inf above 1e38 (fp32, so bf16 too) and 1e307 (fp64), where the true value is below 710 "
       "(SLEEF's cutoff)"},
      {"pto::cos", kOpsH, K::Elementwise, "cos", "Cos", kFloats, tested_in(kElemT, kUlpT), kNone,
       "any input (PyPTO: within +-65504); bf16 and fp64 too"},
      {"pto::tan", kOpsH, K::Elementwise, "tan", "Tan", kFloats, tested_in(kElemT, kUlpT), kNone,
       ""},
      {"pto::asin", kOpsH, K::Elementwise, "asin", "Asin", kFloats, tested_in(kElemT, kUlpT), kNone,
       ""},
      {"pto::acos", kOpsH, K::Elementwise, "acos", "ACos", kFloats, tested_in(kElemT, kUlpT), kNone,
       ""},
      {"pto::atan", kOpsH, K::Elementwise, "atan", "Atan", kFloats, tested_in(kElemT, kUlpT), kNone,
       ""},
      {"pto::sinh", kOpsH, K::Elementwise, "sinh", "Sinh", kFloats, tested_in(kElemT, kUlpT), kNone,
       "finite up to |x| = 89.4 (fp32) / 710.5 (fp64): past 88 / 709, e^|x| / 2 in double (fp32) "
       "or as e^(|x| - ln 2) split in two parts (fp64: up to 1.23 ULP there, SLEEF's bound covers "
       "|x| <= 709)"},
      {"pto::cosh", kOpsH, K::Elementwise, "cosh", "Cosh", kFloats, tested_in(kElemT, kUlpT), kNone,
       "finite up to |x| = 89.4 (fp32) / 710.5 (fp64): past 88 / 709, e^|x| / 2 in double (fp32) "
       "or as e^(|x| - ln 2) split in two parts (fp64: up to 0.97 ULP there, SLEEF's bound covers "
       "|x| <= 709)"},
      {"pto::tanh", kOpsH, K::Elementwise, "tanh", "Tanh", kFloats, tested_in(kElemT, kUlpT), kNone,
       ""},
      {"pto::asinh", kOpsH, K::Elementwise, "asinh", "Asinh", kFloats, tested_in(kElemT, kUlpT),
       kNone, "log|x| + ln 2 (with x's sign) above 1e10, where SLEEF overflows"},
      {"pto::acosh", kOpsH, K::Elementwise, "acosh", "Acosh", kFloats, tested_in(kElemT, kUlpT),
       kNone, "log x + ln 2 above 1e10, where SLEEF overflows"},
      {"pto::atanh", kOpsH, K::Elementwise, "atanh", "Atanh", kFloats, tested_in(kElemT, kUlpT),
       kNone, ""},
      {"pto::erf", kOpsH, K::Elementwise, "erf", "Erf", kFloats, tested_in(kElemT, kUlpT), kNone,
       "fp32: 1.02 ULP near x = 3.6e-38, above SLEEF's stated 1.0 (SLEEF's own error)"},
      {"pto::erfc", kOpsH, K::Elementwise, "erfc", "Erfc", kFloats, tested_in(kElemT, kUlpT), kNone,
       "SLEEF u15 (1.5 ULP bound)"},
      {"pto::cbrt", kOpsH, K::Elementwise, "cbrt", "", kFloats, tested_in(kElemT, kUlpT), kNone,
       "real cube root of negative x"},
      {"pto::pow", kOpsH, K::Elementwise, "pow", "Pow", kNumeric, tested_in(kElemT, kUlpT), kNone,
       "C `pow` edge values (fp64 results that SLEEF overflows near DBL_MAX come from libm); ints "
       "by exact square-and-multiply that wraps (PyTorch), a negative int exponent gives 0 unless "
       "the base is +-1"},
      {"pto::hypot", kOpsH, K::Elementwise, "hypot", "ops.hypot", kFloats, tested_in(kElemT, kUlpT),
       kNone,
       "inf when either operand is inf, even with NaN (C); near the smallest normals 0.90 (fp32) / "
       "0.85 (fp64) ULP, above SLEEF's stated 0.5001 (SLEEF's own error)"},
      {"pto::atan2", kOpsH, K::Elementwise, "atan2", "Atan2", kFloats, tested_in(kElemT, kUlpT),
       kNone, ""},
      {"pto::copysign", kOpsH, K::Elementwise, "copysign", "ops.copysign", kFloats,
       tested_in(kElemT, kSignT, kUlpT), kNone, "|a| with b's sign bit, NaN too"},
      {"pto::heaviside", kOpsH, K::Elementwise, "", "ops.heaviside", kNumeric, tested_in(kSignT),
       kNone, "NumPy's: a NaN a gives NaN (PyTorch: 0); exact"},
      {"pto::fmod", kOpsH, K::Elementwise, "fmod", "Mod, ops.fmod", kNumeric,
       tested_in(kElemT, kUlpT), kNone,
       "ints too (PyPTO: floats only); an int zero divisor fails the call. Floats: exact (SLEEF's "
       "fmod; libm's for the rare lanes where |a / b| overflows, where SLEEF gives NaN)"},
      {"pto::remainder", kOpsH, K::Elementwise, "remainder", "FloorMod, ops.remainder", kNumeric,
       tested_in(kElemT, kUlpT), kNone,
       "floats: fmod(a, b) + b when the signs differ (one rounding)"},
      {"pto::floor_div", kOpsH, K::Elementwise, "floor_div", "FloorDiv", kNumeric,
       tested_in(kElemT, kUlpT), kNone,
       "floats: PyTorch's algorithm from the exact fmod (a / b for b = 0, NaN for infinite a), in "
       "the dtype (fp32: 2 ULP off the exact-arithmetic result); ints: INT_MIN / -1 wraps, a zero "
       "divisor fails the call"},
      {"pto::ceil", kOpsH, K::Elementwise, "ceil", "Ceil", kNumeric, tested_in(kElemT, kUlpT),
       kNone, "ints pass through"},
      {"pto::floor", kOpsH, K::Elementwise, "floor", "Floor", kNumeric, tested_in(kElemT, kUlpT),
       kNone, "ints pass through"},
      {"pto::trunc", kOpsH, K::Elementwise, "trunc", "Trunc", kNumeric, tested_in(kElemT, kUlpT),
       kNone, "ints pass through"},
      {"pto::round", kOpsH, K::Elementwise, "round", "Round, Rint", kNumeric,
       tested_in(kElemT, kUlpT), kNone, "ties to even; `decimals` is the nn_ops.h overload"},
      {"pto::sign", kOpsH, K::Elementwise, "sign", "Sign", kNumeric, tested_in(kElemT, kUlpT),
       kNone, "x itself for +-0 and NaN (NumPy)"},
      {"pto::cast", kOpsH, K::Elementwise, "cast", "Cast", kAll, tested_in(kOpsT, kElemT, kCastsT),
       kNone,
       "every pair rounds once (int32/int64 -> bf16, fp64 -> fp16/bf16 correctly rounded, not "
       "through fp32); float -> int truncates (CAST_NONE), NaN -> 0, saturates; int -> narrower "
       "int wraps; no satmode or fp8/fp4 (the rounding modes are the nn_ops.h overload)"},
      {"pto::clone", kOpsH, K::Elementwise, "clone", "Identity", kAll, tested_in(kElemT), kNone,
       ""},

      // ---- activations -------------------------------------------------------------------
      {"pto::sigmoid", kOpsH, K::Activation, "sigmoid", "Sigmoid", kFloats,
       tested_in(kElemT, kUlpT), kNone,
       "one op, every float dtype (PyPTO documents fp32); e^x / (1 + e^x) for x < 0, so subnormal "
       "results too"},
      {"pto::softplus", kOpsH, K::Activation, "", "Softplus", kFloats, tested_in(kElemT, kUlpT),
       kNone, "PyTorch's with beta 1 and threshold 20 (x itself above 20)"},
      {"pto::softsign", kOpsH, K::Activation, "", "Softsign", kFloats, tested_in(kElemT, kUlpT),
       kNone, ""},
      {"pto::elu", kOpsH, K::Activation, "", "Elu", kFloats, tested_in(kElemT, kUlpT), kNone,
       "swept with alpha = 1"},
      {"pto::gelu", kOpsH, K::Activation, "", "GeLU, Gelu, ops.gelu", kFloats,
       tested_in(kElemT, kUlpT), kNone,
       "exact (erf) form, computed as x/2 erfc(-x/sqrt 2) with a first-order correction for the "
       "rounding of -x/sqrt 2, which the tail amplifies: 6.8 (fp32) / 18 (fp64) ULP at x = -13.2 / "
       "-37.7, where the result is near the subnormals"},
      {"pto::gelu_tanh", kOpsH, K::Activation, "", "ops.gelu(approximate='tanh')", kFloats,
       tested_in(kElemT, kUlpT), kNone,
       "PyTorch gelu(approximate='tanh'), computed as x sigmoid(2u) (stable sigmoid): the rounding "
       "of u is amplified by |2u| in the negative tail, up to 178 (fp32) / 399 (fp64) ULP near x = "
       "-9.7 / -11.6"},
      {"pto::lrelu", kOpsH, K::Activation, "lrelu", "nn.LeakyReLU", kFloats,
       tested_in(kElemT, kUlpT), kNone, "swept with the default slope 0.01"},
      {"pto::relu", kOpsH, K::Activation, "relu", "ReLU, ReLUV2", kNumeric,
       tested_in(kElemT, kUlpT), kNone, "NaN propagates, -0 gives +0"},
      {"pto::relu6", kOpsH, K::Activation, "", "ReLU6", kNumeric, tested_in(kElemT, kUlpT), kNone,
       "NaN propagates"},

      // ---- compares, predicates, logical, bitwise, selection -----------------------------
      {"pto::eq", kOpsH, K::Predicate, "eq", "Equal", kAll, tested_in(kElemT), kNone,
       "every dtype (PyPTO: fp16, fp32)"},
      {"pto::ne", kOpsH, K::Predicate, "ne", "NotEqual", kAll, tested_in(kElemT), kNone,
       "true with NaN"},
      {"pto::lt", kOpsH, K::Predicate, "lt", "Less", kAll, tested_in(kElemT), kNone, ""},
      {"pto::le", kOpsH, K::Predicate, "le", "LessEqual", kAll, tested_in(kElemT), kNone, ""},
      {"pto::gt", kOpsH, K::Predicate, "gt", "Greater", kAll, tested_in(kElemT), kNone, ""},
      {"pto::ge", kOpsH, K::Predicate, "ge", "GreaterEqual", kAll, tested_in(kElemT), kNone, ""},
      {"pto::signbit", kOpsH, K::Predicate, "signbit", "", kNumeric, tested_in(kElemT), kNone,
       "true for -0 and negative NaN"},
      {"pto::isfinite", kOpsH, K::Predicate, "isfinite", "IsFinite", kNumeric, tested_in(kElemT),
       kNone, "no tile alignment rule (PyPTO: last tile dim a multiple of 32)"},
      {"pto::isnan", kOpsH, K::Predicate, "isnan", "IsNan", kNumeric, tested_in(kElemT), kNone,
       "ints too (always false)"},
      {"pto::isinf", kOpsH, K::Predicate, "", "IsInf", kNumeric, tested_in(kElemT), kNone, ""},
      {"pto::logical_not", kOpsH, K::Predicate, "logical_not", "LogicalNot", kAll,
       tested_in(kElemT), kNone, "NaN counts as true"},
      {"pto::logical_and", kOpsH, K::Predicate, "logical_and", "LogicalAnd", kAll,
       tested_in(kElemT), kNone, "NaN counts as true"},
      {"pto::logical_or", kOpsH, K::Predicate, "", "LogicalOr", kAll, tested_in(kElemT), kNone, ""},
      {"pto::logical_xor", kOpsH, K::Predicate, "", "LogicalXor", kAll, tested_in(kElemT), kNone,
       ""},
      {"pto::bitwise_not", kOpsH, K::Predicate, "bitwise_not", "Invert", kIntBool,
       tested_in(kElemT), kNone, "logical not for bool (PyTorch)"},
      {"pto::bitwise_and", kOpsH, K::Predicate, "bitwise_and", "BitwiseAnd", kIntBool,
       tested_in(kElemT), kNone, "int64 and bool too"},
      {"pto::bitwise_or", kOpsH, K::Predicate, "bitwise_or", "BitwiseOr", kIntBool,
       tested_in(kElemT), kNone, ""},
      {"pto::bitwise_xor", kOpsH, K::Predicate, "bitwise_xor", "BitwiseXor", kIntBool,
       tested_in(kElemT), kNone, ""},
      {"pto::bitwise_left_shift", kOpsH, K::Predicate, "bitwise_left_shift", "LeftShift",
       "int8-int64, uint8", tested_in(kElemT), kNone,
       "every int dtype (PyPTO A2/A3: int16/uint16); a shift < 0 or >= the width gives 0"},
      {"pto::bitwise_right_shift", kOpsH, K::Predicate, "bitwise_right_shift", "RightShift",
       "int8-int64, uint8", tested_in(kElemT), kNone,
       "arithmetic for signed ints; a shift < 0 or >= the width fills with the sign"},
      {"pto::where", kOpsH, K::Predicate, "where", "Select", kAll, tested_in(kElemT), kNone,
       "cond must be DT_BOOL; operands broadcast (PyPTO: same rank)"},
      {"pto::clip", kOpsH, K::Predicate, "clip", "ops.clip_by_value", kNumeric, tested_in(kElemT),
       kNone,
       "NaN propagates; min > max gives max (PyTorch clamp); bounds may mix tensor and scalar"},

      // ---- reductions and scans ----------------------------------------------------------
      {"pto::sum", kOpsH, K::Reduction, "sum", "ReduceSum", kNumeric,
       tested_in(kOpsT, kReduceT, kZerosT), kNone,
       "one axis (ops.h) or a list (reduce_ops.h); fp16/bf16 accumulate in fp32; empty: +0; only "
       "-0 terms: -0 (IEEE 754, NumPy; PyTorch's CPU sum gives +0)"},
      {"pto::amax", kOpsH, K::Reduction, "amax", "ReduceMax", kNumeric,
       tested_in(kOpsT, kReduceT, kZerosT), kNone,
       "NaN propagates; -0 < +0; empty: -inf or the dtype's minimum"},
      {"pto::amin", kOpsH, K::Reduction, "amin", "ReduceMin", kNumeric,
       tested_in(kOpsT, kReduceT, kZerosT), kNone,
       "NaN propagates; -0 < +0; empty: +inf or the dtype's maximum"},
      {"pto::prod", kReduceH, K::Reduction, "prod", "ReduceProd", kNumeric,
       tested_in(kReduceT, kZerosT), kNone, "ints wrap; empty: 1"},
      {"pto::mean", kReduceH, K::Reduction, "", "ReduceMean", kFloats, tested_in(kReduceT, kZerosT),
       kNone, "floats only; empty: NaN; only -0 terms: -0"},
      {"pto::var", kReduceH, K::Reduction, "var", "ops.var", kFloats, tested_in(kReduceT), kNone,
       "two-pass; n <= correction gives inf or NaN (PyTorch)"},
      {"pto::argmax", kReduceH, K::Reduction, "argmax", "Argmax", kNumeric, tested_in(kReduceT),
       kNone, "DT_INT32; first index on ties, a NaN wins (PyTorch); empty: -1; no alignment rule"},
      {"pto::argmin", kReduceH, K::Reduction, "argmin", "Argmin", kNumeric, tested_in(kReduceT),
       kNone, "as argmax"},
      {"pto::cumsum", kReduceH, K::Reduction, "cumsum", "CumSum", kNumeric,
       tested_in(kReduceT, kZerosT), kNone,
       "int inputs give DT_INT64 (PyPTO, PyTorch); a leading -0 stays -0 (NumPy; PyTorch's CPU "
       "cumsum gives +0)"},
      {"pto::cumprod", kReduceH, K::Reduction, "cumprod", "CumProd", kNumeric,
       tested_in(kReduceT, kZerosT), kNone, "ints too, giving DT_INT64 (PyPTO: floats only)"},

      // ---- views, shape and movement -----------------------------------------------------
      {"pto::view", kOpsH, K::Shape, "view", "Slice, StridedSlice", kAll, tested_in(kOpsT, kShapeT),
       kNone, "no copy; offsets may be symbolic; stride 1 only"},
      {"pto::assemble", kOpsH, K::Shape, "assemble", "Assign", kAll, tested_in(kOpsT, kShapeT),
       kNone, "writes the valid region into a window of an output"},
      {"pto::reshape", kShapeH, K::Shape, "reshape", "Reshape", kAll, tested_in(kShapeT), kNone,
       "a copy (inplace=False)"},
      {"pto::unsqueeze", kShapeH, K::Shape, "unsqueeze", "ExpandDims", kAll, tested_in(kShapeT),
       kNone, ""},
      {"pto::squeeze", kShapeH, K::Shape, "", "Squeeze", kAll, tested_in(kShapeT), kNone,
       "listed dims that are not 1 stay (PyTorch)"},
      {"pto::expand", kShapeH, K::Shape, "expand_clone", "BroadcastTo, ops.expand", kAll,
       tested_in(kShapeT), kNone, "materialized; -1 keeps a dim"},
      {"pto::broadcast_to", kShapeH, K::Shape, "expand_clone", "BroadcastTo", kAll,
       tested_in(kShapeT), kNone, "= expand"},
      {"pto::transpose", kShapeH, K::Shape, "transpose", "ops.swapaxes", kAll, tested_in(kShapeT),
       kNone, "any pair at any rank (PyPTO restricts 4-D and 5-D)"},
      {"pto::permute", kShapeH, K::Shape, "permute", "Transpose", kAll, tested_in(kShapeT), kNone,
       "rank 1-4 (PyPTO: 1-5)"},
      {"pto::concat", kShapeH, K::Shape, "concat", "Concat", kAll, tested_in(kShapeT), kNone,
       "1-128 inputs (PyPTO: 2-128); the concat axis may be tiled"},
      {"pto::split", kShapeH, K::Shape, "", "Split", kAll, tested_in(kShapeT), kNone,
       "views, no copy (PyTorch)"},
      {"pto::stack", kShapeH, K::Shape, "", "Pack, Stack", kAll, tested_in(kShapeT), kNone, ""},
      {"pto::tile", kShapeH, K::Shape, "", "Tile", kAll, tested_in(kShapeT), kNone,
       "PyTorch `tile`"},
      {"pto::pad", kShapeH, K::Shape, "pad", "Pad", kAll, tested_in(kShapeT), kNone,
       "constant, right/bottom only (PyPTO); MindSpore and PyTorch also pad left"},
      {"pto::tril", kShapeH, K::Shape, "tril", "Tril", kAll, tested_in(kShapeT), kNone,
       "diagonal may be symbolic; rank 2-4"},
      {"pto::triu", kShapeH, K::Shape, "triu", "Triu", kAll, tested_in(kShapeT), kNone,
       "diagonal may be symbolic; rank 2-4"},

      // ---- creation ----------------------------------------------------------------------
      {"pto::full", kOpsH, K::Creation, "full", "Fill", kAll, tested_in(kOpsT, kMatmulT), kNone,
       "the value is converted to the dtype (PyPTO requires a matching Element)"},
      {"pto::zeros", kOpsH, K::Creation, "zeros", "Zeros", kAll, tested_in(kRegressT), kNone, ""},
      {"pto::ones", kShapeH, K::Creation, "ones", "Ones", kAll, tested_in(kShapeT), kNone, ""},
      {"pto::arange", kShapeH, K::Creation, "arange", "Range, ops.arange", "int32, fp32",
       tested_in(kShapeT), kNone, "fp32 values computed in double and rounded once (NumPy)"},
      {"pto::uniform", kShapeH, K::Creation, "uniform", "UniformReal", kFloats, tested_in(kShapeT),
       kNone, "Philox4x32-10 with the documented mapping; any shape and tile"},
      {"pto::normal", kShapeH, K::Creation, "normal", "StandardNormal", kFloats, tested_in(kShapeT),
       kNone, "Box-Muller on the Philox words"},

      // ---- matmul ------------------------------------------------------------------------
      {"pto::matmul", kMatmulH, K::Matmul, "matmul", "MatMul, BatchMatMul",
       "fp16, bf16, fp32, int8 -> int32", tested_in(kMatmulT), kNone,
       "bias and relu; no scale, fp8 or c_matrix_nz"},

      // ---- indexing ----------------------------------------------------------------------
      {"pto::gather", kIndexH, K::Indexing, "gather", "GatherD", kAll, tested_in(kIndexT), kNone,
       "index values are checked at run time (RuntimeError)"},
      {"pto::index_select", kIndexH, K::Indexing, "index_select",
       "Gather, GatherV2, SparseGatherV2", kAll, tested_in(kIndexT), kNone, "1-D index"},
      {"pto::scatter", kIndexH, K::Indexing, "scatter", "TensorScatterElements", kAll,
       tested_in(kIndexT), kNone, "functional; duplicates: the last write wins (deterministic)"},
      {"pto::index_add", kIndexH, K::Indexing, "index_add", "IndexAdd", kNumeric,
       tested_in(kIndexT), kNone, "functional; duplicates accumulate in index order"},
      {"pto::index_put", kIndexH, K::Indexing, "index_put_", "", kAll, tested_in(kIndexT), kNone,
       "functional; duplicates: the last write wins (PyTorch: undefined)"},
      {"pto::one_hot", kIndexH, K::Indexing, "one_hot", "OneHot", "int32, int64 -> int64",
       tested_in(kIndexT), kNone, "num_classes must be given (no -1)"},
      {"pto::embedding", kIndexH, K::Indexing, "", "EmbeddingLookup", kAll, tested_in(kIndexT),
       kNone, "padding_idx gives zeros (nn.Embedding)"},
      {"pto::unsorted_segment_sum", kIndexH, K::Indexing, "", "UnsortedSegmentSum", kNumeric,
       tested_in(kIndexT), kNone, "out-of-range ids are dropped; fp16/bf16 accumulate in fp32"},
      {"pto::unsorted_segment_prod", kIndexH, K::Indexing, "", "UnsortedSegmentProd", kNumeric,
       tested_in(kIndexT), kNone, "empty segment: 1"},
      {"pto::unsorted_segment_min", kIndexH, K::Indexing, "", "UnsortedSegmentMin", kNumeric,
       tested_in(kIndexT), kNone, "empty segment: the dtype's largest finite value (MindSpore)"},
      {"pto::unsorted_segment_max", kIndexH, K::Indexing, "", "UnsortedSegmentMax", kNumeric,
       tested_in(kIndexT), kNone, "empty segment: the dtype's lowest finite value (MindSpore)"},

      // ---- sorting, selection, special functions -----------------------------------------
      {"pto::sort", kSortH, K::Sort, "", "Sort", kAll, tested_in(kSortT), kNone,
       "always stable; NaN largest (PyTorch)"},
      {"pto::argsort", kSortH, K::Sort, "argsort", "ops.argsort", kAll, tested_in(kSortT), kNone,
       "descending by default (PyPTO; PyTorch ascending); every dtype"},
      {"pto::topk", kSortH, K::Sort, "topk", "TopK", kAll, tested_in(kSortT), kNone,
       "ties: the lower index first; any axis"},
      {"pto::unique", kSortH, K::Sort, "", "Unique", kAll, tested_in(kSortT), kNone,
       "static-size result plus a count (a kernel cannot size outputs at run time)"},
      {"pto::bessel_i0e", kSortH, K::Sort, "", "BesselI0e", kFloats, tested_in(kSortT, kUlpT),
       kNone, "PyTorch special.i0e"},
      {"pto::bessel_i1e", kSortH, K::Sort, "", "BesselI1e", kFloats, tested_in(kSortT, kUlpT),
       kNone, "PyTorch special.i1e"},

      // ---- composites (nn_ops.h) ---------------------------------------------------------
      {"pto::softmax", kNnH, K::Composite, "softmax", "Softmax", kFloats, tested_in(kNnT), kNone,
       "a row with +inf or NaN is NaN (PyTorch)"},
      {"pto::log_softmax", kNnH, K::Composite, "", "LogSoftmax", kFloats, tested_in(kNnT), kNone,
       ""},
      {"pto::logsumexp", kNnH, K::Composite, "", "ops.logsumexp", kFloats, tested_in(kNnT), kNone,
       "a row of all -inf gives -inf (PyTorch)"},
      {"pto::layer_norm", kNnH, K::Composite, "", "LayerNorm", kFloats, tested_in(kNnT), kNone,
       "normalizes dims [begin_axis, rank); two-pass biased variance"},
      {"pto::rms_norm", kNnH, K::Composite, "rms_norm", "RmsNorm", kFloats, tested_in(kNnT), kNone,
       "over the last dim, in fp32 for fp16/bf16"},
      {"pto::l2_normalize", kNnH, K::Composite, "", "L2Normalize", kFloats, tested_in(kNnT), kNone,
       "epsilon 1e-4 by default (MindSpore)"},
      {"pto::sigmoid_cross_entropy_with_logits", kNnH, K::Composite, "",
       "SigmoidCrossEntropyWithLogits", kFloats, tested_in(kNnT), kNone, "the stable form"},
      {"pto::softmax_cross_entropy_with_logits", kNnH, K::Composite, "",
       "SoftmaxCrossEntropyWithLogits", kFloats, tested_in(kNnT), kNone,
       "returns loss and backprop"},
      {"pto::dropout_gen_mask", kNnH, K::Composite, "", "DropoutGenMask", "bool", tested_in(kNnT),
       kNone, "a bool mask (MindSpore packs bits); Philox, reproducible per (key, counter)"},
      {"pto::dropout_do_mask", kNnH, K::Composite, "", "DropoutDoMask", kFloats, tested_in(kNnT),
       kNone, "dropped elements are exactly 0, NaN and inf too"},
      {"pto::dropout", kNnH, K::Composite, "", "Dropout", kFloats, tested_in(kNnT), kNone,
       "counter-based RNG (key, counter) instead of a global generator"},
      {"pto::bias_add", kNnH, K::Composite, "", "BiasAdd", kNumeric, tested_in(kNnT), kNone,
       "NCHW or NHWC; ints wrap"},
      {"pto::prelu", kNnH, K::Composite, "prelu", "PReLU", kFloats, tested_in(kNnT), kNone,
       "weight of length 1 or C = x.shape[1]"},
      {"pto::div_no_nan", kNnH, K::Elementwise, "", "DivNoNan", kNumeric, tested_in(kNnT, kUlpT),
       kNone, "0 wherever b == 0, even for a = NaN"},
      {"pto::floor_mod", kNnH, K::Elementwise, "", "FloorMod", kNumeric, tested_in(kNnT, kUlpT),
       kNone, "= pto::remainder"},
      {"pto::mod", kNnH, K::Elementwise, "", "Mod", kNumeric, tested_in(kNnT, kUlpT), kNone,
       "= pto::fmod (MindSpore Mod(-4, 3) = -1); NaN when |a / b| overflows, see fmod"},
      {"pto::ceil_div", kNnH, K::Elementwise, "ceil_div", "", kNumeric, tested_in(kNnT), kNone,
       "every int dtype (PyPTO: int32); floats ceil(a / b)"},
      {"pto::gcd", kOpsH, K::Elementwise, "gcd", "ops.gcd", "int8-int64, uint8", tested_in(kNnT),
       kNone, "|INT_MIN| wraps"},
      {"pto::round", kNnH, K::Elementwise, "round(x, decimals)", "ops.round", kNumeric,
       tested_in(kNnT), kNone, "PyTorch's round(x * 10^d) / 10^d"},
      {"pto::lerp", kNnH, K::Elementwise, "", "Lerp", kFloats, tested_in(kNnT), kNone,
       "PyTorch's two-sided form, lerp(a, b, 1) = b exactly"},
      {"pto::addcmul", kNnH, K::Elementwise, "", "Addcmul", kNumeric, tested_in(kNnT), kNone, ""},
      {"pto::addcdiv", kNnH, K::Elementwise, "", "Addcdiv", kFloats, tested_in(kNnT), kNone, ""},
      {"pto::expand_exp_dif", kNnH, K::Elementwise, "expand_exp_dif", "", kFloats,
       tested_in(kNnT, kUlpT), kNone,
       "exp of the rounded a - b, as PyPTO defines it: up to 64 (fp32) / 114 (fp64) ULP when |a - "
       "b| is large"},
      {"pto::axpy", kNnH, K::Elementwise, "axpy_", "", "fp16, bf16, fp32, fp64; fp32 += fp16",
       tested_in(kNnT), kNone, "functional; assemble the result into y for PyPTO's in-place form"},
      {"pto::cast", kNnH, K::Elementwise, "cast(mode=)", "", kAll, tested_in(kNnT), kNone,
       "rounding modes for float -> int; no satmode"},
      {"pto::quantize", kNnH, K::Elementwise, "quantize", "", "fp32 -> int8, uint8",
       tested_in(kNnT), kNone, "round(x * scale + zero_points), the documented formula"},
      {"pto::dequantize", kNnH, K::Elementwise, "dequantize", "", "int8, int16, uint8 -> fp32",
       tested_in(kNnT), kNone, ""},
      {"pto::approximate_equal", kNnH, K::Predicate, "", "ApproximateEqual", kFloats,
       tested_in(kNnT), kNone, "NaN gives false"},
      {"pto::greater", kNnH, K::Predicate, "greater", "Greater", kAll, tested_in(kNnT), kNone,
       "= pto::gt"},
      {"pto::argmax_with_value", kNnH, K::Reduction, "", "ArgMaxWithValue", kNumeric,
       tested_in(kNnT), kNone, "{argmax, amax}"},
      {"pto::argmin_with_value", kNnH, K::Reduction, "", "ArgMinWithValue", kNumeric,
       tested_in(kNnT), kNone, "{argmin, amin}"},
      {"pto::full_like", kNnH, K::Creation, "", "ops.full_like", kAll, tested_in(kNnT), kNone, ""},
      {"pto::zeros_like", kNnH, K::Creation, "", "ZerosLike", kAll, tested_in(kNnT), kNone, ""},
      {"pto::ones_like", kNnH, K::Creation, "", "OnesLike", kAll, tested_in(kNnT), kNone, ""},
      {"pto::fillpad", kNnH, K::Shape, "fillpad", "", kAll, tested_in(kNnT), kNone,
       "rank 1-4 (PyPTO: 1-2)"},
      {"pto::gathermask", kNnH, K::Shape, "gathermask", "", kAll, tested_in(kNnT), kNone, ""},
      {"pto::interleave", kNnH, K::Shape, "interleave", "", kAll, tested_in(kNnT), kNone, ""},
      {"pto::deinterleave", kNnH, K::Shape, "deinterleave", "", kAll, tested_in(kNnT), kNone, ""},
      {"pto::experimental::online_softmax", kNnH, K::Composite, "experimental.online_softmax", "",
       "fp32 -> bf16, fp32", tested_in(kNnT), kNone, ""},
      {"pto::experimental::online_softmax_update", kNnH, K::Composite,
       "experimental.online_softmax_update", "", "fp32", tested_in(kNnT), kNone, ""},
      {"pto::experimental::transposed_batchmatmul", kNnH, K::Matmul,
       "experimental.transposed_batchmatmul", "", "as matmul", tested_in(kNnT), kNone, ""},

      // ---- tile shapes and control flow --------------------------------------------------
      {"pto::set_vec_tile_shapes", kTileH, K::Control, "set_vec_tile_shapes", "", "",
       tested_in(kOpsT), kNone, "no 32-byte alignment needed (tails are masked)"},
      {"pto::get_vec_tile_shapes", kTileH, K::Control, "get_vec_tile_shapes", "", "",
       tested_in(kPropertyT), kNone, ""},
      {"pto::set_cube_tile_shapes", kMatmulH, K::Control, "set_cube_tile_shapes", "", "",
       tested_in(kMatmulT), kNone, ""},
      {"pto::get_cube_tile_shapes", kMatmulH, K::Control, "get_cube_tile_shapes", "", "",
       tested_in(kMatmulT), kNone, ""},
      {"pto::loop", kControlH, K::Control, "loop", "", "", tested_in(kOpsT, kCollT), kNone,
       "traced once with a symbolic index; unroll_list runs the loop as written"},
      {"pto::loop_unroll", kControlH, K::Control, "loop_unroll", "", "", tested_in(kControlT),
       kNone,
       "PyPTO's formula for factors that divide each other; every item exactly once otherwise"},
      {"pto::cond", kControlH, K::Control, "cond", "", "", tested_in(kControlT), kNone,
       "a run-time condition must be inside a pto::loop body (PyPTO's implicit loop(1))"},
      {"pto::is_loop_begin", kControlH, K::Control, "is_loop_begin", "", "", tested_in(kControlT),
       kNone, ""},
      {"pto::is_loop_end", kControlH, K::Control, "is_loop_end", "", "", tested_in(kControlT),
       kNone, ""},
      {"pto::Tensor::at", kTensorH, K::Control, "t[i, j] (GetTensorData)", "",
       "int8-int64, uint8, bool", tested_in(kControlT, kSymbolicT), kNone,
       "a run-time scalar read; floats are a DTypeError"},
      {"pto::set_tensor_data", kOpsH, K::Control, "t[i, j] = s (SetTensorData)", "", kAll,
       tested_in(kCompatT), kNone, "every dtype (PyPTO: int32); the value is known at trace time"},

      // ---- distributed: shmem primitives -------------------------------------------------
      {"pto::distributed::create_shmem_tensor", kDistH, K::Distributed, "create_shmem_tensor", "",
       kShmemTypes, tested_in(kDistT, kPipeT, kRegressT), kNone,
       "int8, int64 and fp64 data too; any number of groups (PyPTO: 2)"},
      {"pto::distributed::create_shmem_signal", kDistH, K::Distributed, "create_shmem_signal", "",
       "", tested_in(kDistT, kReuseS), kNone, ""},
      {"pto::distributed::shmem_view", kDistH, K::Distributed, "shmem_view", "", "",
       tested_in(kRegressT), kNone, ""},
      {"pto::distributed::my_symbolic_pe", kDistH, K::Distributed, "my_symbolic_pe", "", "",
       tested_in(kDistT, kPipeT), kNone, ""},
      {"pto::distributed::shmem_put", kDistH, K::Distributed, "shmem_put", "", kShmemTypes,
       tested_in(kDistT, kPipeT, kErrorsT), kNone,
       "ADD is atomic for every dtype, lost-update free"},
      {"pto::distributed::shmem_get", kDistH, K::Distributed, "shmem_get", "", kShmemTypes,
       tested_in(kDistT, kPipeT), kNone, "converts to any dtype (C++ targetDtype)"},
      {"pto::distributed::shmem_get_with_token", kDistH, K::Distributed, "shmem_get", "",
       kShmemTypes, tested_in(kShmemT), kNone, "the get's token and data (C++'s two results)"},
      {"pto::distributed::shmem_signal", kDistH, K::Distributed, "shmem_signal", "", "",
       tested_in(kDistT, kPipeT), kNone, "release ordering after this PE's earlier puts"},
      {"pto::distributed::shmem_signal_all", kDistH, K::Distributed, "shmem_signal(target_pe=-1)",
       "", "", tested_in(kShmemT), kNone, ""},
      {"pto::distributed::shmem_wait_until", kDistH, K::Distributed, "shmem_wait_until", "", "",
       tested_in(kDistT, kPipeT), kNone,
       "also NE, LT, LE, GT, GE (PyPTO: EQ only); DeadlockError after the timeout"},
      {"pto::distributed::shmem_barrier_all", kDistH, K::Distributed, "shmem_barrier_all", "", "",
       tested_in(kDistT), kNone, ""},
      {"pto::distributed::shmem_clear_data", kDistH, K::Distributed, "shmem_clear_data", "", "",
       tested_in(kShmemT), kNone, "zeroes exactly the view (PyPTO: a contiguous run)"},
      {"pto::distributed::shmem_clear_signal", kDistH, K::Distributed, "shmem_clear_signal", "", "",
       tested_in(kShmemT), kNone, "zeroes every slot (PyPTO's device loop may leave a tail)"},
      {"pto::distributed::shmem_store", kDistH, K::Distributed, "experimental.shmem_store", "",
       kShmemTypes, tested_in(kShmemT), kNone,
       "the data path of shmem_put (no separate on-chip buffer)"},
      {"pto::distributed::shmem_load", kDistH, K::Distributed, "experimental.shmem_load", "",
       kShmemTypes, tested_in(kShmemT), kNone, "the data path of shmem_get"},
      {"pto::distributed::nop", kDistH, K::Distributed, "experimental.nop", "", "",
       tested_in(kShmemT), kNone, ""},
      {"pto::distributed::shmem_fence", kDistH, K::Distributed, "", "", "", tested_in(kSyncT),
       kNone, "OpenSHMEM shmem_fence (PyPTO has none)"},
      {"pto::distributed::shmem_quiet", kDistH, K::Distributed, "", "", "", tested_in(kSyncT),
       kNone, "OpenSHMEM shmem_quiet (PyPTO has none)"},
      {"pto::distributed::shmem_put_signal", kDistH, K::Distributed, "", "", kShmemTypes,
       tested_in(kSyncT, kLitmusT), kNone, "OpenSHMEM shmem_put_signal, per tile"},
      {"pto::distributed::shmem_wait_until_all", kDistH, K::Distributed, "", "", "",
       tested_in(kSyncT), kNone, "OpenSHMEM 1.5, with a status mask"},
      {"pto::distributed::shmem_wait_until_any", kDistH, K::Distributed, "", "", "",
       tested_in(kSyncT), kNone, "OpenSHMEM 1.5; -1 for an empty set (SIZE_MAX there)"},
      {"pto::distributed::shmem_wait_until_some", kDistH, K::Distributed, "", "", "",
       tested_in(kSyncT), kNone, "OpenSHMEM 1.5"},
      {"pto::distributed::shmem_test", kDistH, K::Distributed, "", "", "", tested_in(kSyncT), kNone,
       "OpenSHMEM shmem_test: never blocks"},
      {"pto::distributed::shmem_atomic_fetch_add", kDistH, K::Distributed, "", "",
       "int32, int64, fp32", tested_in(kSyncT), kNone, "OpenSHMEM; fp32 is an extension"},
      {"pto::distributed::shmem_atomic_swap", kDistH, K::Distributed, "", "", "int32, int64, fp32",
       tested_in(kSyncT), kNone, "OpenSHMEM"},
      {"pto::distributed::shmem_atomic_compare_swap", kDistH, K::Distributed, "", "",
       "int32, int64", tested_in(kSyncT), kNone, "OpenSHMEM"},

      // ---- distributed: collectives ------------------------------------------------------
      {"pto::distributed::n_pes", kCollH, K::Collective, "", "", "", tested_in(kShmemT), kNone,
       "the group's size at trace time"},
      {"pto::distributed::allreduce", kCollH, K::Collective, "AllReduce (C++ library)", "AllReduce",
       kShmemTypes, tested_in(kCollT, kGoldenT), kNone,
       "sum, max, min, prod for every dtype (HCCL lacks prod for int16, bf16); one- or two-shot"},
      {"pto::distributed::allgather", kCollH, K::Collective, "AllGather (C++ library)", "AllGather",
       kShmemTypes, tested_in(kCollT, kGoldenT), kNone, "packs valid parts (PyPTO)"},
      {"pto::distributed::reduce_scatter", kCollH, K::Collective, "ReduceScatter (C++ library)",
       "ReduceScatter", kShmemTypes, tested_in(kCollT, kGoldenT), kNone,
       "rows need not divide by n_pes (HCCL: they must)"},
      {"pto::distributed::broadcast", kCollH, K::Collective, "", "Broadcast", kShmemTypes,
       tested_in(kCollT), kNone, ""},
      {"pto::distributed::all_to_all", kCollH, K::Collective, "", "AlltoAll", kShmemTypes,
       tested_in(kCollT), kNone, "equal blocks, or per-peer counts (HCCL alltoallv)"},
      {"pto::distributed::barrier", kCollH, K::Collective, "", "", "", tested_in(kCollT), kNone,
       ""},
      {"pto::distributed::shmem_reset", kCollH, K::Collective, "reuse protocol (§7.6)", "", "",
       tested_in(kReuseS), kNone, ""},
  };
  for (const auto &[fn, ulp] : kMeasuredUlp) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](const OpRow &r) { return r.fn == fn; });
    if (it == rows.end())
      throw std::logic_error("op registry: measured ULP figures for " + std::string(fn) +
                             ", which has no row");
    it->ulp = ulp;
  }
  return rows;
}

} // namespace

const std::vector<OpRow> &ops() {
  static const std::vector<OpRow> rows = make_rows();
  return rows;
}

const std::vector<ShardingName> &sharding_names() {
  static const std::vector<ShardingName> names = {
      {"Abs"},
      {"ACos"},
      {"Acosh"},
      {"Add"},
      {"ApproximateEqual"},
      {"Asin"},
      {"Asinh"},
      {"Assign", "no rule, not applicable: ptojit has no mutable variables (MindSpore's "
                 "Parameter); the sharded spelling of an assignment is parallel::assemble(x, "
                 "offsets, out), which writes each PE's part into the kernel output out"},
      {"AssignAdd", "no rule, not applicable (no mutable variables): parallel::add(x, out's "
                    "value), then parallel::assemble into the output"},
      {"AssignSub", "no rule, not applicable (no mutable variables): parallel::sub(x, out's "
                    "value), then parallel::assemble into the output"},
      {"Atan"},
      {"Atan2"},
      {"Atanh"},
      {"BesselI0e"},
      {"BesselI1e"},
      {"BiasAdd"},
      {"BroadcastTo"},
      {"Ceil"},
      {"Cos"},
      {"Cosh"},
      {"Div"},
      {"DivNoNan"},
      {"Elu"},
      {"Equal"},
      {"Erf"},
      {"Erfc"},
      {"Exp"},
      {"ExpandDims"},
      {"Expm1"},
      {"Floor"},
      {"FloorDiv"},
      {"FloorMod"},
      {"Gelu/GeLU"},
      {"Greater"},
      {"GreaterEqual"},
      {"Inv"},
      {"Less"},
      {"LessEqual"},
      {"LogicalAnd"},
      {"LogicalNot"},
      {"LogicalOr"},
      {"Log"},
      {"Log1p"},
      {"Maximum"},
      {"Minimum"},
      {"Mod"},
      {"Mul"},
      {"Neg"},
      {"NotEqual"},
      {"OnesLike"},
      {"Pack"},
      {"Pow"},
      {"RealDiv"},
      {"Reciprocal"},
      {"ReduceSum"},
      {"ReduceMean"},
      {"ReLU"},
      {"ReLU6"},
      {"ReLUV2", "ReLUV2's second output, the mask, is pto::gt(x, 0)"},
      {"Round"},
      {"Rsqrt"},
      {"Sigmoid"},
      {"SigmoidCrossEntropyWithLogits"},
      {"Sign"},
      {"Sin"},
      {"Sinh"},
      {"Softplus"},
      {"Softsign"},
      {"Sqrt"},
      {"Square"},
      {"Squeeze"},
      {"Sub"},
      {"Tan"},
      {"Tanh"},
      {"TensorAdd"},
      {"Transpose", "MindSpore's Transpose takes a whole permutation: pto::permute"},
      {"ZerosLike"},
      {"ArgMaxWithValue"},
      {"ArgMinWithValue"},
      {"ReduceMax"},
      {"ReduceMin"},
      {"BatchMatMul"},
      {"MatMul"},
      {"Cast"},
      {"Concat"},
      {"L2Normalize"},
      {"LogSoftmax"},
      {"Softmax"},
      {"SoftmaxCrossEntropyWithLogits"},
      {"Split"},
      {"TopK"},
      {"DropoutDoMask"},
      {"DropoutGenMask"},
      {"EmbeddingLookup"},
      {"SparseGatherV2", "forward only: the rows of params picked by indices (index_select)"},
      {"GatherV2"},
      {"Gather"},
      {"OneHot"},
      {"PReLU"},
      {"Reshape"},
      {"StridedSlice",
       "pto::view takes stride 1 only: parallel::strided_slice composes a stride != "
       "1 with pto::index_select"},
      {"Slice"},
      {"Tile"},
      {"Unique"},
      {"UnsortedSegmentSum"},
      {"UnsortedSegmentMin"},
      {"UnsortedSegmentMax"},
  };
  return names;
}

} // namespace pto::registry
