// interpreter_matmul.cpp - The reference interpreter's matmul (matmul.h): for each output element
// of the valid region, a sequential dot product over the valid K in fp32 (fp16/bf16/fp32 operands;
// the products of fp16/bf16 are exact in fp32) or wrapping int32 (int8 operands), then bias, relu
// and one rounding to the output dtype. Plain loops: this is the oracle, not the fast path.
#include "interp/interpreter.h"
#include "passes/tile_expand.h"

#include <algorithm>
#include <cmath>

namespace pto::codegen::interp {

namespace {

// The operands' elements by the shared rules (pto/element.h): fp16/bf16/fp32 widen exactly to
// fp32, int8/int32 to int32; the fp32 accumulator rounds once to the output dtype.
float load_f32(const uint8_t *p, DataType dt) { return static_cast<float>(load_f(p, dt)); }
int32_t load_i32(const uint8_t *p, DataType dt) { return static_cast<int32_t>(load_i(p, dt)); }

} // namespace

int32_t Run::matmul(const ir::Op &op) {
  Ref a, b, c, bias;
  if (int32_t st = ref(op.inputs[0], a))
    return st;
  if (int32_t st = ref(op.inputs[1], b))
    return st;
  if (int32_t st = ref(op.outputs[0], c))
    return st;
  const bool has_bias = op.inputs.size() == 3;
  if (has_bias)
    if (int32_t st = ref(op.inputs[2], bias))
      return st;
  std::vector<int64_t> av, bv, cv, biasv;
  if (int32_t st = valid_of(op.inputs[0], a.shape, av))
    return st;
  if (int32_t st = valid_of(op.inputs[1], b.shape, bv))
    return st;
  if (int32_t st = valid_of(op.outputs[0], c.shape, cv))
    return st;
  if (has_bias)
    if (int32_t st = valid_of(op.inputs[2], bias.shape, biasv))
      return st;
  if (int32_t st = check_window(a, av))
    return st;
  if (int32_t st = check_window(b, bv))
    return st;
  if (int32_t st = check_window(c, cv))
    return st;
  if (has_bias)
    if (int32_t st = check_window(bias, biasv))
      return st;

  const size_t r = c.shape.size(), nb = r - 2;
  const size_t am = op.a_trans ? r - 1 : r - 2, ak = op.a_trans ? r - 2 : r - 1;
  const size_t bk = op.b_trans ? r - 1 : r - 2, bn = op.b_trans ? r - 2 : r - 1;
  const int64_t M = cv[r - 2], N = cv[r - 1], K = std::min(av[ak], bv[bk]);
  const int64_t bias_n = has_bias ? biasv.back() : 0;
  const bool fp = is_float(a.dt);

  std::vector<int64_t> batch(nb, 0), ai(r, 0), bi(r, 0), ci(r, 0), bias_i;
  if (has_bias)
    bias_i.assign(bias.shape.size(), 0);
  // The batch dims of the output's valid region, row-major; a size-1 operand dim broadcasts.
  int64_t n_batches = 1;
  for (size_t d = 0; d < nb; ++d)
    n_batches *= std::max<int64_t>(cv[d], 0);
  for (int64_t bt = 0; bt < n_batches; ++bt) {
    int64_t rem = bt;
    for (size_t d = nb; d-- > 0;) {
      batch[d] = rem % cv[d];
      rem /= cv[d];
    }
    for (size_t d = 0; d < nb; ++d) {
      ai[d] = a.shape[d] == 1 ? 0 : batch[d];
      bi[d] = b.shape[d] == 1 ? 0 : batch[d];
      ci[d] = batch[d];
    }
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        ci[r - 2] = i;
        ci[r - 1] = j;
        ai[am] = i;
        bi[bn] = j;
        if (has_bias)
          bias_i.back() = j;
        const bool with_bias = has_bias && j < bias_n;
        if (fp) {
          float acc = 0.0f;
          for (int64_t k = 0; k < K; ++k) {
            ai[ak] = k;
            bi[bk] = k;
            acc += load_f32(a.at(ai), a.dt) * load_f32(b.at(bi), b.dt);
          }
          if (with_bias)
            acc += load_f32(bias.at(bias_i), bias.dt);
          if (op.relu && !std::isnan(acc))
            acc = acc > 0.0f ? acc : 0.0f;
          store_f(c.at(ci), c.dt, acc);
        } else {
          uint32_t acc = 0; // wraps, as int32 hardware accumulation does
          for (int64_t k = 0; k < K; ++k) {
            ai[ak] = k;
            bi[bk] = k;
            acc += static_cast<uint32_t>(load_i32(a.at(ai), a.dt) * load_i32(b.at(bi), b.dt));
          }
          if (with_bias)
            acc += static_cast<uint32_t>(load_i32(bias.at(bias_i), bias.dt));
          int32_t v = static_cast<int32_t>(acc);
          if (op.relu)
            v = std::max(v, 0);
          store_i(c.at(ci), c.dt, v);
        }
      }
    }
  }
  return PTO_OK;
}

} // namespace pto::codegen::interp
