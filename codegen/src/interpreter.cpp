// interpreter.cpp - The reference interpreter (make_interpreter in compile.h): walks an
// ir::Program with scalar C++ semantics and calls the same runtime ABI as generated code. It is
// the oracle for tests and the PTO_RUN_MODE=interpret debug mode, so it favours obviously
// correct loops over speed. The LLVM lowering implements exactly these semantics:
//
// - Storage: params are the caller's contiguous row-major buffers; locals are zero-filled buffers
//   allocated once per call; views alias their root with offsets evaluated at the op; shmem data
//   is only touched through pto_rt_put/get/clear.
// - Every compute op walks the tiles of its output (tile_expand with the op's tile) and, inside a
//   tile, only the valid region; elements outside it are never touched.
// - Before an op touches a view, the touched window (per dim: the clamped valid extent) is
//   checked against the root tensor; outside it the call fails with pto_rt_fail kind 4.
// - fp16/bf16/fp32 compute in float, double in double, ints in int64 wrapped to the dtype; every
//   store rounds to nearest even.
// - No C++ exception escapes for a run-time fault: it is recorded through the ABI and run()
//   returns PTO_ERR. Only ptojit bugs (InternalError) throw.
#include "pto/codegen/compile.h"
#include "pto/codegen/slots.h"
#include "pto/codegen/tile_expand.h"
#include "pto/error.h"
#include "pto/half.h"
#include "pto/ir/printer.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace pto::codegen {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;

// pto_rt_fail kinds (abi.h).
constexpr int32_t kFailDivZero = 1;
constexpr int32_t kFailPe = 3;
constexpr int32_t kFailOffset = 4;

// ---------------------------------------------------------------------------------------------
// Element conversions.

/// `d` as a float rounded to odd: exact when representable, else the truncation toward zero
/// with the last bit set. Rounding that float to fp16/bf16 (nearest even) then equals rounding
/// `d` directly, which avoids the double-rounding error of double -> float -> half.
float round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || std::isinf(d) || static_cast<double>(f) == d)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d))
    f = std::nextafter(f, 0.0f);
  return bits_float(float_bits(f) | 1u);
}

double load_f(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_FP32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DT_DOUBLE: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case DT_FP16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_float(h);
  }
  case DT_BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_to_float(h);
  }
  default: break;
  }
  throw InternalError("<interpreter>", "load", "not a floating dtype: " + name(dt));
}

int64_t load_i(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_INT8: return static_cast<int8_t>(*p);
  case DT_UINT8: return *p;
  case DT_BOOL: return *p != 0;
  case DT_INT16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DT_INT32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DT_INT64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default: break;
  }
  throw InternalError("<interpreter>", "load", "not an integer dtype: " + name(dt));
}

template <class T> T saturate(double v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (t >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

template <class T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

/// Stores a floating value: floats round to nearest even, ints truncate toward zero and
/// saturate (NaN -> 0), bool is v != 0.
void store_f(uint8_t *p, DataType dt, double v) {
  switch (dt) {
  case DT_FP32: put(p, static_cast<float>(v)); return;
  case DT_DOUBLE: put(p, v); return;
  case DT_FP16: put(p, float_to_fp16(round_odd(v))); return;
  case DT_BF16: put(p, float_to_bf16(round_odd(v))); return;
  case DT_INT8: put(p, saturate<int8_t>(v)); return;
  case DT_INT16: put(p, saturate<int16_t>(v)); return;
  case DT_INT32: put(p, saturate<int32_t>(v)); return;
  case DT_INT64: put(p, saturate<int64_t>(v)); return;
  case DT_UINT8: put(p, saturate<uint8_t>(v)); return;
  case DT_BOOL: put(p, static_cast<uint8_t>(v != 0)); return;
  default: break;
  }
  throw InternalError("<interpreter>", "store", "unsupported dtype " + name(dt));
}

/// Stores an integer value: ints wrap (two's complement), floats round to nearest even, bool
/// is v != 0.
void store_i(uint8_t *p, DataType dt, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  switch (dt) {
  case DT_INT8: put(p, static_cast<int8_t>(static_cast<uint8_t>(u))); return;
  case DT_UINT8: put(p, static_cast<uint8_t>(u)); return;
  case DT_INT16: put(p, static_cast<int16_t>(static_cast<uint16_t>(u))); return;
  case DT_INT32: put(p, static_cast<int32_t>(static_cast<uint32_t>(u))); return;
  case DT_INT64: put(p, v); return;
  case DT_BOOL: put(p, static_cast<uint8_t>(v != 0)); return;
  case DT_FP32: put(p, static_cast<float>(v)); return; // one rounding, nearest even
  case DT_DOUBLE: put(p, static_cast<double>(v)); return;
  case DT_FP16:
  case DT_BF16: store_f(p, dt, static_cast<double>(v)); return;
  default: break;
  }
  throw InternalError("<interpreter>", "store", "unsupported dtype " + name(dt));
}

int64_t int_min(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::min();
  case DT_INT16: return std::numeric_limits<int16_t>::min();
  case DT_INT32: return std::numeric_limits<int32_t>::min();
  case DT_UINT8: return 0;
  default: return std::numeric_limits<int64_t>::min();
  }
}
int64_t int_max(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::max();
  case DT_INT16: return std::numeric_limits<int16_t>::max();
  case DT_INT32: return std::numeric_limits<int32_t>::max();
  case DT_UINT8: return std::numeric_limits<uint8_t>::max();
  default: return std::numeric_limits<int64_t>::max();
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar op semantics.

template <class C> C nan_max(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  return a > b ? a : b;
}
template <class C> C nan_min(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  return a < b ? a : b;
}

/// A floating unary op in compute type C (float for fp16/bf16/fp32, double for DT_DOUBLE).
template <class C> C unary_f(OpKind k, C x) {
  switch (k) {
  case OpKind::Neg: return -x;
  case OpKind::Abs: return std::fabs(x);
  case OpKind::Exp: return std::exp(x);
  case OpKind::Log: return std::log(x);
  case OpKind::Sqrt: return std::sqrt(x);
  case OpKind::Rsqrt: return C(1) / std::sqrt(x);
  case OpKind::Reciprocal: return C(1) / x;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a floating unary op");
}

template <class C> C binary_f(OpKind k, C a, C b) {
  switch (k) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Maximum: return nan_max(a, b);
  case OpKind::Minimum: return nan_min(a, b);
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

int64_t wrap(uint64_t u) { return static_cast<int64_t>(u); }

int64_t unary_i(OpKind k, int64_t x) {
  switch (k) {
  case OpKind::Neg: return wrap(0 - static_cast<uint64_t>(x));
  case OpKind::Abs: return x < 0 ? wrap(0 - static_cast<uint64_t>(x)) : x;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not an integer unary op");
}

/// An integer binary op in int64 (wrapping); false for a zero divisor.
bool binary_i(OpKind k, int64_t a, int64_t b, int64_t &r) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (k) {
  case OpKind::Add: r = wrap(ua + ub); return true;
  case OpKind::Sub: r = wrap(ua - ub); return true;
  case OpKind::Mul: r = wrap(ua * ub); return true;
  case OpKind::Div:
    if (b == 0)
      return false;
    r = b == -1 ? wrap(0 - ua) : a / b; // INT64_MIN / -1 wraps instead of trapping
    return true;
  case OpKind::Maximum: r = a > b ? a : b; return true;
  case OpKind::Minimum: r = a < b ? a : b; return true;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

// ---------------------------------------------------------------------------------------------
// Index helpers.

std::vector<int64_t> row_major(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

/// Calls f(idx) for every idx in the box [off, off + ext), row-major (last dim fastest).
template <class F>
void for_box(const std::vector<int64_t> &off, const std::vector<int64_t> &ext, F &&f) {
  size_t r = off.size();
  for (auto e : ext)
    if (e <= 0)
      return;
  std::vector<int64_t> idx = off;
  while (true) {
    f(idx);
    size_t d = r;
    while (true) {
      if (d == 0)
        return;
      --d;
      if (++idx[d] < off[d] + ext[d])
        break;
      idx[d] = off[d];
    }
  }
}

int64_t dot(const std::vector<int64_t> &idx, const std::vector<int64_t> &strides) {
  int64_t s = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    s += idx[i] * strides[i];
  return s;
}

/// Where a value's elements are during one op: its root storage, row-major root strides, and
/// for views the evaluated window offsets.
struct Ref {
  uint8_t *root = nullptr;
  DataType dt = DT_FP32;
  int64_t esize = 0;
  std::vector<int64_t> shape;      ///< the value's own shape, evaluated
  std::vector<int64_t> root_shape; ///< the root's shape
  std::vector<int64_t> strides;    ///< root strides, elements
  std::vector<int64_t> offsets;    ///< views only (empty otherwise)
  int64_t lin0 = 0;                ///< linear element offset of the window origin

  uint8_t *at(const std::vector<int64_t> &idx) const {
    return root + (lin0 + dot(idx, strides)) * esize;
  }
};

/// pto_block extents/strides for a box of rank <= 4, padded with leading unit dims.
pto_block make_block(const std::vector<int64_t> &ext, const std::vector<int64_t> &src_strides,
                     const std::vector<int64_t> &dst_strides) {
  pto_block b{};
  size_t r = ext.size(), pad = 4 - r;
  for (size_t i = 0; i < 4; ++i) {
    b.extent[i] = i < pad ? 1 : ext[i - pad];
    b.src_stride[i] = i < pad ? 0 : src_strides[i - pad];
    b.dst_stride[i] = i < pad ? 0 : dst_strides[i - pad];
  }
  return b;
}

// ---------------------------------------------------------------------------------------------

class Interpreter;

/// The state of one call on one PE. Everything mutable lives here, so many PEs may run one
/// Interpreter at the same time.
class Run {
public:
  Run(const Interpreter &ip, pto_ctx *ctx, void *const *args, const int64_t *dims);
  int32_t exec(const std::vector<Op> &ops);

private:
  int32_t exec_op(const Op &op);
  int32_t eval(const SymbolicScalar &s, int64_t &out);
  int32_t eval_all(const std::vector<SymbolicScalar> &s, std::vector<int64_t> &out);
  int32_t ref(ValueId id, Ref &out);
  /// Clamped valid extents of value `id` whose shape is `shape`.
  int32_t valid_of(ValueId id, const std::vector<int64_t> &shape, std::vector<int64_t> &out);
  /// Fails (kind 4) when a view's window of extents `ext` lies outside its root.
  int32_t check_window(const Ref &r, const std::vector<int64_t> &ext);
  int32_t fail(int32_t kind, int64_t a, int64_t b) { return pto_rt_fail(ctx_, kind, site_, a, b); }

  int32_t unary(const Op &op);
  int32_t binary(const Op &op);
  int32_t reduce(const Op &op);
  int32_t full(const Op &op);
  int32_t assemble(const Op &op);
  int32_t shmem_put(const Op &op);
  int32_t shmem_get(const Op &op);
  int32_t shmem_signal_wait(const Op &op);
  int32_t shmem_clear(const Op &op);
  int32_t loop(const Op &op);

  const Interpreter &ip_;
  const ir::Program &p_;
  pto_ctx *ctx_;
  void *const *args_;
  const int64_t *dims_;
  std::vector<int64_t> dim_base_; ///< per param index: first entry in dims_
  std::vector<int64_t> loop_idx_;
  std::vector<std::vector<uint8_t>> local_; ///< per value id: local storage
  std::vector<std::vector<int64_t>> local_shape_;
  std::vector<char> allocated_;
  SymbolEnv env_;
  int32_t site_ = -1;
};

class Interpreter final : public Executable {
public:
  explicit Interpreter(const ir::Program &p) : p_(p) {
    sites_ = site_table(p_);
    int32_t n = 0;
    number(p_.body, n);
    hash_ = ir::structural_hash(p_);
  }

  int32_t run(pto_ctx *ctx, void *const *args, const int64_t *dims) const override {
    std::vector<int64_t> heap;
    std::vector<int32_t> n_pes;
    std::vector<const char *> names;
    bool shmem = !p_.shmems.empty();
    if (shmem) {
      for (const auto &g : p_.groups) {
        heap.push_back(g.heap_bytes);
        n_pes.push_back(g.n_pes);
        names.push_back(g.name.c_str());
      }
      int32_t st = pto_rt_kernel_enter(ctx, hash_, static_cast<int32_t>(p_.groups.size()),
                                       heap.data(), n_pes.data(), names.data());
      if (st != PTO_OK)
        return st;
    }
    Run r(*this, ctx, args, dims);
    int32_t st = r.exec(p_.body);
    if (st != PTO_OK)
      return st;
    return shmem ? pto_rt_kernel_exit(ctx) : PTO_OK;
  }

  const ir::Program &program() const { return p_; }
  int32_t site_of(const Op &op) const { return site_.at(&op); }

private:
  /// Site numbers in site_table order: pre-order, loop bodies right after their loop op.
  void number(const std::vector<Op> &ops, int32_t &n) {
    for (const auto &op : ops) {
      site_[&op] = n++;
      number(op.body, n);
    }
  }

  ir::Program p_;
  std::unordered_map<const Op *, int32_t> site_;
  uint64_t hash_ = 0;
};

Run::Run(const Interpreter &ip, pto_ctx *ctx, void *const *args, const int64_t *dims)
    : ip_(ip), p_(ip.program()), ctx_(ctx), args_(args), dims_(dims) {
  int64_t base = 0;
  for (ValueId id : p_.params) {
    dim_base_.push_back(base);
    base += static_cast<int64_t>(p_.value(id).shape.size());
  }
  loop_idx_.assign(static_cast<size_t>(p_.n_loops), 0);
  local_.resize(p_.values.size());
  local_shape_.resize(p_.values.size());
  allocated_.assign(p_.values.size(), 0);
  env_ = [this](const SymExpr &s) -> int64_t {
    switch (s.sym) {
    case SymKind::InputDim: return dims_[dim_base_.at(static_cast<size_t>(s.a)) + s.b];
    case SymKind::LoopIndex: return loop_idx_.at(static_cast<size_t>(s.a));
    case SymKind::MyPe: return pto_rt_my_pe(ctx_, static_cast<int32_t>(s.a));
    case SymKind::Named: break;
    }
    throw InternalError("<interpreter>", "evaluate",
                        "free symbol '" + s.name + "' has no value in a kernel");
  };
}

int32_t Run::eval(const SymbolicScalar &s, int64_t &out) {
  if (s.is_concrete()) {
    out = s.expr().value;
    return PTO_OK;
  }
  try {
    out = evaluate(s, env_);
  } catch (const RuntimeError &) {
    return fail(kFailDivZero, 0, 0);
  }
  return PTO_OK;
}

int32_t Run::eval_all(const std::vector<SymbolicScalar> &s, std::vector<int64_t> &out) {
  out.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if (int32_t st = eval(s[i], out[i]))
      return st;
  return PTO_OK;
}

int32_t Run::ref(ValueId id, Ref &out) {
  const Value &v = p_.value(id);
  const Value &root = p_.root(id);
  out.dt = v.dtype;
  out.esize = bytes_of(v.dtype);
  if (int32_t st = eval_all(v.shape, out.shape))
    return st;
  switch (root.kind) {
  case ValueKind::Param: {
    out.root = static_cast<uint8_t *>(args_[root.param_index]);
    auto b = dim_base_.at(static_cast<size_t>(root.param_index));
    out.root_shape.assign(dims_ + b, dims_ + b + static_cast<int64_t>(root.shape.size()));
    break;
  }
  case ValueKind::Local: {
    auto r = static_cast<size_t>(root.id);
    if (!allocated_[r]) {
      if (int32_t st = eval_all(root.shape, local_shape_[r]))
        return st;
      int64_t n = 1;
      for (auto d : local_shape_[r])
        n *= d < 0 ? 0 : d;
      local_[r].assign(static_cast<size_t>(n * bytes_of(root.dtype)), 0);
      allocated_[r] = 1;
    }
    out.root = local_[r].data();
    out.root_shape = local_shape_[r];
    break;
  }
  case ValueKind::View:
  case ValueKind::ShmemData:
  case ValueKind::Token:
    throw InternalError("<interpreter>", "interpreter",
                        "value %" + v.name + " has no local storage (rerun with PTO_DUMP=ir)");
  }
  out.strides = row_major(out.root_shape);
  out.offsets.clear();
  out.lin0 = 0;
  if (v.kind == ValueKind::View) {
    if (int32_t st = eval_all(v.offsets, out.offsets))
      return st;
    out.lin0 = dot(out.offsets, out.strides);
  }
  return PTO_OK;
}

int32_t Run::valid_of(ValueId id, const std::vector<int64_t> &shape, std::vector<int64_t> &out) {
  if (int32_t st = eval_all(p_.value(id).valid, out))
    return st;
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = tile_valid(out[d], 0, shape[d]);
  return PTO_OK;
}

int32_t Run::check_window(const Ref &r, const std::vector<int64_t> &ext) {
  if (r.offsets.empty())
    return PTO_OK;
  for (auto e : ext)
    if (e <= 0)
      return PTO_OK; // nothing is touched
  for (size_t d = 0; d < ext.size(); ++d) {
    if (r.offsets[d] < 0)
      return fail(kFailOffset, r.offsets[d], r.root_shape[d]);
    if (r.offsets[d] + ext[d] > r.root_shape[d])
      return fail(kFailOffset, r.offsets[d] + ext[d] - 1, r.root_shape[d]);
  }
  return PTO_OK;
}

int32_t Run::exec(const std::vector<Op> &ops) {
  for (const auto &op : ops) {
    site_ = ip_.site_of(op);
    if (int32_t st = exec_op(op))
      return st;
  }
  return PTO_OK;
}

int32_t Run::exec_op(const Op &op) {
  switch (op.kind) {
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Reciprocal:
  case OpKind::Cast: return unary(op);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Maximum:
  case OpKind::Minimum: return binary(op);
  case OpKind::Sum:
  case OpKind::Amax:
  case OpKind::Amin: return reduce(op);
  case OpKind::Full: return full(op);
  case OpKind::Assemble: return assemble(op);
  case OpKind::ShmemPut: return shmem_put(op);
  case OpKind::ShmemGet: return shmem_get(op);
  case OpKind::ShmemSignal:
  case OpKind::ShmemWaitUntil: return shmem_signal_wait(op);
  case OpKind::ShmemClearData: return shmem_clear(op);
  case OpKind::Nop: return PTO_OK;
  case OpKind::Loop: return loop(op);
  }
  return PTO_OK;
}

/// The per-element strides of an operand of `in_shape` broadcast to an output of rank `r`
/// (numpy, right-aligned; a size-1 operand dim gets stride 0).
std::vector<int64_t> broadcast_strides(const Ref &in, size_t r) {
  std::vector<int64_t> s(r, 0);
  size_t ra = in.shape.size();
  for (size_t i = 0; i < ra; ++i)
    if (in.shape[i] != 1)
      s[i + r - ra] = in.strides[i];
  return s;
}

/// Touched extents of a broadcast operand for output extents `ext`.
std::vector<int64_t> broadcast_ext(const Ref &in, const std::vector<int64_t> &ext) {
  size_t r = ext.size(), ra = in.shape.size();
  std::vector<int64_t> e(ra);
  for (size_t i = 0; i < ra; ++i)
    e[i] = in.shape[i] == 1 ? std::min<int64_t>(1, ext[i + r - ra]) : ext[i + r - ra];
  return e;
}

int32_t Run::unary(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(x, yv))
    return st;
  const DataType in = x.dt, out = y.dt;
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(t.size.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.at(idx);
      uint8_t *dst = y.at(idx);
      if (op.kind == OpKind::Cast) {
        if (is_float(in))
          store_f(dst, out, load_f(src, in));
        else
          store_i(dst, out, load_i(src, in));
      } else if (in == DT_DOUBLE) {
        store_f(dst, out, unary_f<double>(op.kind, load_f(src, in)));
      } else if (is_float(in)) {
        store_f(dst, out, unary_f<float>(op.kind, static_cast<float>(load_f(src, in))));
      } else {
        store_i(dst, out, unary_i(op.kind, load_i(src, in)));
      }
    });
  }
  return PTO_OK;
}

int32_t Run::binary(const Op &op) {
  Ref a, b, y;
  const bool has_scalar = op.scalar.has_value();
  if (int32_t st = ref(op.inputs[0], a))
    return st;
  if (!has_scalar)
    if (int32_t st = ref(op.inputs[1], b))
      return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(a, broadcast_ext(a, yv)))
    return st;
  if (!has_scalar)
    if (int32_t st = check_window(b, broadcast_ext(b, yv)))
      return st;
  const size_t r = y.shape.size();
  const auto as = broadcast_strides(a, r);
  const auto bs = has_scalar ? std::vector<int64_t>(r, 0) : broadcast_strides(b, r);
  const DataType dt = y.dt;
  const bool fp = is_float(dt);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(r);
    for (size_t d = 0; d < r; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    bool div_zero = false;
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      if (div_zero)
        return;
      uint8_t *dst = y.at(idx);
      const uint8_t *pa = a.root + (a.lin0 + dot(idx, as)) * a.esize;
      if (fp) {
        double va = load_f(pa, a.dt);
        double vb = has_scalar ? op.scalar->f : load_f(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        if (dt == DT_DOUBLE)
          store_f(dst, dt, binary_f<double>(op.kind, va, vb));
        else
          store_f(dst, dt,
                  binary_f<float>(op.kind, static_cast<float>(va), static_cast<float>(vb)));
      } else {
        int64_t va = load_i(pa, a.dt);
        int64_t vb = has_scalar ? op.scalar->i : load_i(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        int64_t res = 0;
        if (!binary_i(op.kind, va, vb, res)) {
          div_zero = true;
          return;
        }
        store_i(dst, dt, res);
      }
    });
    if (div_zero)
      return fail(kFailDivZero, 0, 0);
  }
  return PTO_OK;
}

int32_t Run::reduce(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> xv, yv;
  if (int32_t st = valid_of(op.inputs[0], x.shape, xv))
    return st;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  const size_t xr = x.shape.size(), yr = y.shape.size(), axis = static_cast<size_t>(op.axis);
  // Output dim -> input dim (or none, for the kept-away axis of a rank-1 full reduction).
  std::vector<int> in_dim(yr, -1);
  for (size_t od = 0; od < yr; ++od) {
    if (op.keepdim)
      in_dim[od] = od == axis ? -1 : static_cast<int>(od);
    else if (xr > 1)
      in_dim[od] = static_cast<int>(od < axis ? od : od + 1);
  }
  // Tile entries index output dims; without keepdim the axis entry of the input-rank tile goes.
  std::vector<int64_t> tile;
  if (op.keepdim) {
    tile.assign(op.tile.vec.begin(), op.tile.vec.begin() + static_cast<long>(yr));
  } else {
    for (size_t d = 0; d < xr && d < op.tile.vec.size(); ++d)
      if (d != axis)
        tile.push_back(op.tile.vec[d]);
    while (tile.size() < yr)
      tile.push_back(1);
  }
  std::vector<int64_t> xs(yr, 0);
  std::vector<int64_t> touched(xr, 0);
  for (size_t od = 0; od < yr; ++od)
    if (in_dim[od] >= 0) {
      xs[od] = x.strides[static_cast<size_t>(in_dim[od])];
      touched[static_cast<size_t>(in_dim[od])] = yv[od];
    }
  const int64_t n = xv[axis], astride = x.strides[axis];
  touched[axis] = n;
  if (int32_t st = check_window(x, touched))
    return st;
  const DataType dt = x.dt;
  for (const auto &t : tile_expand(y.shape, tile)) {
    std::vector<int64_t> ext(yr);
    for (size_t d = 0; d < yr; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.root + (x.lin0 + dot(idx, xs)) * x.esize;
      const int64_t step = astride * x.esize;
      uint8_t *dst = y.at(idx);
      if (is_float(dt)) {
        auto run = [&](auto zero) {
          using C = decltype(zero);
          C acc = op.kind == OpKind::Sum    ? C(0)
                  : op.kind == OpKind::Amax ? -std::numeric_limits<C>::infinity()
                                            : std::numeric_limits<C>::infinity();
          for (int64_t k = 0; k < n; ++k) {
            C v = static_cast<C>(load_f(src + k * step, dt));
            if (op.kind == OpKind::Sum)
              acc += v;
            else if (op.kind == OpKind::Amax)
              acc = nan_max(acc, v);
            else
              acc = nan_min(acc, v);
          }
          store_f(dst, dt, static_cast<double>(acc));
        };
        if (dt == DT_DOUBLE)
          run(0.0);
        else
          run(0.0f);
      } else {
        int64_t acc = op.kind == OpKind::Sum    ? 0
                      : op.kind == OpKind::Amax ? int_min(dt)
                                                : int_max(dt);
        for (int64_t k = 0; k < n; ++k) {
          int64_t v = load_i(src + k * step, dt);
          if (op.kind == OpKind::Sum)
            acc = wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
          else if (op.kind == OpKind::Amax)
            acc = v > acc ? v : acc;
          else
            acc = v < acc ? v : acc;
        }
        store_i(dst, dt, acc);
      }
    });
  }
  return PTO_OK;
}

int32_t Run::full(const Op &op) {
  Ref y;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  uint8_t pattern[8] = {};
  const ir::Scalar &s = *op.scalar;
  if (s.is_int)
    store_i(pattern, y.dt, s.i);
  else
    store_f(pattern, y.dt, s.f);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(y.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memcpy(y.at(idx), pattern, static_cast<size_t>(y.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::assemble(const Op &op) {
  Ref x, w;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], w))
    return st;
  std::vector<int64_t> wv;
  if (int32_t st = valid_of(op.outputs[0], w.shape, wv))
    return st;
  if (int32_t st = check_window(x, wv))
    return st;
  if (int32_t st = check_window(w, wv))
    return st;
  for (const auto &t : tile_expand(w.shape, op.tile.vec)) {
    std::vector<int64_t> ext(w.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(wv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memmove(w.at(idx), x.at(idx), static_cast<size_t>(w.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::shmem_put(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  Ref src;
  if (int32_t st = ref(op.inputs[0], src))
    return st;
  std::vector<int64_t> sv, offs;
  if (int32_t st = valid_of(op.inputs[0], src.shape, sv))
    return st;
  if (int32_t st = check_window(src, sv))
    return st;
  int64_t pe = 0;
  if (int32_t st = eval(op.pe, pe))
    return st;
  if (pe < 0 || pe >= s.n_pes)
    return fail(kFailPe, pe, s.n_pes);
  if (int32_t st = eval_all(op.view_offsets, offs))
    return st;
  const auto data_strides = row_major(s.shape);
  const int64_t esize = bytes_of(s.dtype);
  const size_t r = op.view_shape.size();
  for (const auto &t : tile_expand(op.view_shape, op.tile.vec)) {
    std::vector<int64_t> ext(r), at(r);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      ext[d] = tile_valid(sv[d], t.offset[d], t.size[d]);
      empty = empty || ext[d] == 0;
    }
    if (empty)
      continue;
    for (size_t d = 0; d < r; ++d) {
      at[d] = offs[d] + t.offset[d];
      if (at[d] < 0)
        return fail(kFailOffset, at[d], s.shape[d]);
      if (at[d] + ext[d] > s.shape[d])
        return fail(kFailOffset, at[d] + ext[d] - 1, s.shape[d]);
    }
    pto_block b = make_block(ext, src.strides, data_strides);
    int32_t st = pto_rt_put(ctx_, s.group_index, static_cast<int32_t>(pe),
                            op.atomic == ir::Atomic::Add ? PTO_ATOMIC_ADD : PTO_ATOMIC_SET,
                            src.at(t.offset), src.dt,
                            s.data_offset_bytes + dot(at, data_strides) * esize,
                            s.data_offset_bytes + s.data_bytes, s.dtype, &b, site_);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

int32_t Run::shmem_get(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  Ref dst;
  if (int32_t st = ref(op.outputs.at(1), dst))
    return st;
  std::vector<int64_t> vv, offs;
  if (int32_t st = eval_all(op.view_valid, vv))
    return st;
  int64_t pe = 0;
  if (int32_t st = eval(op.pe, pe))
    return st;
  if (pe < 0 || pe >= s.n_pes)
    return fail(kFailPe, pe, s.n_pes);
  if (int32_t st = eval_all(op.view_offsets, offs))
    return st;
  const auto data_strides = row_major(s.shape);
  const int64_t esize = bytes_of(s.dtype);
  const size_t r = op.view_shape.size();
  for (const auto &t : tile_expand(op.view_shape, op.tile.vec)) {
    std::vector<int64_t> ext(r), at(r);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      ext[d] = tile_valid(vv[d], t.offset[d], t.size[d]);
      empty = empty || ext[d] == 0;
    }
    if (empty)
      continue;
    for (size_t d = 0; d < r; ++d) {
      at[d] = offs[d] + t.offset[d];
      if (at[d] < 0)
        return fail(kFailOffset, at[d], s.shape[d]);
      if (at[d] + ext[d] > s.shape[d])
        return fail(kFailOffset, at[d] + ext[d] - 1, s.shape[d]);
    }
    pto_block b = make_block(ext, data_strides, dst.strides);
    int32_t st = pto_rt_get(ctx_, s.group_index, static_cast<int32_t>(pe),
                            s.data_offset_bytes + dot(at, data_strides) * esize,
                            s.data_offset_bytes + s.data_bytes, s.dtype, dst.at(t.offset), dst.dt,
                            &b, site_);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

int32_t Run::shmem_signal_wait(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  const ir::SlotGeometry &g = *op.slots;
  std::vector<int64_t> o;
  if (int32_t st = eval_all(g.view_offsets, o))
    return st;
  for (size_t d = 0; d < o.size(); ++d) {
    if (o[d] < 0)
      return fail(kFailOffset, o[d], g.data_shape[d]);
    if (o[d] + g.view_shape[d] > g.data_shape[d])
      return fail(kFailOffset, o[d] + g.view_shape[d] - 1, g.data_shape[d]);
  }
  int64_t row = 0, target = -1;
  if (int32_t st = eval(op.pe, row))
    return st;
  if (row < 0 || row >= s.n_pes)
    return fail(kFailPe, row, s.n_pes);
  if (op.kind == OpKind::ShmemSignal && !op.target_all) {
    if (int32_t st = eval(op.target_pe, target))
      return st;
    if (target < 0 || target >= s.n_pes)
      return fail(kFailPe, target, s.n_pes);
  }
  for (const auto &t : tile_expand(g.view_shape, g.tile)) {
    const int64_t slot = slot_number(g, o, t.offset, row);
    const int64_t off = s.signal_offset_bytes + slot * 8 * 4;
    int32_t st;
    if (op.kind == OpKind::ShmemSignal)
      st = pto_rt_signal(ctx_, s.group_index, static_cast<int32_t>(target), off,
                         op.atomic == ir::Atomic::Add ? PTO_ATOMIC_ADD : PTO_ATOMIC_SET,
                         op.signal, site_);
    else
      st = pto_rt_wait_until(ctx_, s.group_index, off, static_cast<int32_t>(op.cmp), op.signal,
                             op.clear ? 1 : 0, slot, site_);
    if (st != PTO_OK)
      return st;
  }
  return PTO_OK;
}

int32_t Run::shmem_clear(const Op &op) {
  const ir::ShmemInfo &s = p_.shmems.at(static_cast<size_t>(op.shmem));
  std::vector<int64_t> offs;
  if (int32_t st = eval_all(op.view_offsets, offs))
    return st;
  for (size_t d = 0; d < offs.size(); ++d) {
    if (offs[d] < 0)
      return fail(kFailOffset, offs[d], s.shape[d]);
    if (offs[d] + op.view_shape[d] > s.shape[d])
      return fail(kFailOffset, offs[d] + op.view_shape[d] - 1, s.shape[d]);
  }
  const auto data_strides = row_major(s.shape);
  pto_block b = make_block(op.view_shape, data_strides, data_strides);
  return pto_rt_clear(ctx_, s.group_index, s.data_offset_bytes + dot(offs, data_strides) * bytes_of(s.dtype),
                      s.data_offset_bytes + s.data_bytes, s.dtype, &b, site_);
}

int32_t Run::loop(const Op &op) {
  int64_t start = 0, stop = 0, step = 0;
  if (int32_t st = eval(op.start, start))
    return st;
  if (int32_t st = eval(op.stop, stop))
    return st;
  if (int32_t st = eval(op.step, step))
    return st;
  if (step <= 0)
    return PTO_OK;
  const int32_t loop_site = site_;
  for (int64_t i = start; i < stop;) {
    loop_idx_.at(static_cast<size_t>(op.loop_id)) = i;
    if (int32_t st = exec(op.body))
      return st;
    site_ = loop_site;
    if (__builtin_add_overflow(i, step, &i))
      break;
  }
  return PTO_OK;
}

} // namespace

std::shared_ptr<const Executable> make_interpreter(const ir::Program &p) {
  return std::make_shared<Interpreter>(p);
}

} // namespace pto::codegen
