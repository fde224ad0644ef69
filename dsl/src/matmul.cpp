// matmul.cpp - Tracing of set_cube_tile_shapes and matmul: PyPTO's cube tile checks, operand
// ranks, batch broadcasting, dtype pairs, bias shape; then one ir::Op (OpKind::Matmul).
#include "pto/matmul.h"

#include "pto/ir/recorder.h"

#include <fmt/format.h>

namespace pto {

using ir::Recorder;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;
using SrcLoc = std::source_location;

namespace {

std::string ints(const std::vector<int64_t> &v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

/// One of m, k, n: [L0, L1...], every L1 a multiple of L0 (which implies L0 <= L1).
void check_levels(const char *what, const std::vector<int64_t> &v, const SrcLoc &loc) {
  const char *op = "set_cube_tile_shapes";
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] <= 0)
      throw TileShapeError(loc, op, fmt::format("{} = {}: entry {} must be > 0", what, ints(v), i));
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[0] > v[i])
      throw TileShapeError(
          loc, op,
          fmt::format("{} = {}: L0 {} exceeds L1 {}; need L0 <= L1", what, ints(v), v[0], v[i]));
    if (v[i] % v[0] != 0)
      throw TileShapeError(
          loc, op,
          fmt::format("{} = {}: L1 {} is not a multiple of L0 {}", what, ints(v), v[i], v[0]));
  }
}

/// The scratch budget of matmul.h: the A, B and C blocks of one cube tile, 4 bytes each element.
/// L1 entries are checked against the budget first, so the products below cannot overflow.
void check_scratch(int64_t ml1, int64_t kal1, int64_t kbl1, int64_t nl1, const SrcLoc &loc) {
  const char *op = "set_cube_tile_shapes";
  const int64_t limit = kMaxCubeScratchBytes / 4;
  bool fits = ml1 <= limit && kal1 <= limit && kbl1 <= limit && nl1 <= limit;
  int64_t elems = fits ? ml1 * kal1 + kbl1 * nl1 + ml1 * nl1 : 0;
  if (!fits || elems > limit)
    throw TileShapeError(
        loc, op,
        fmt::format("the blocks of mL1 {}, kAL1 {}, kBL1 {}, nL1 {} need more than {} bytes of "
                    "scratch (mL1*kAL1 + kBL1*nL1 + mL1*nL1 elements of 4 bytes; the budget is "
                    "2^28); use smaller L1 entries",
                    ml1, kal1, kbl1, nl1, kMaxCubeScratchBytes));
}

bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

bool same_dim(const SymbolicScalar &a, const SymbolicScalar &b) {
  return a.same_as(b) || (a.is_concrete() && b.is_concrete() && a.concrete() == b.concrete());
}

const Value &operand(Recorder &r, const Tensor &t, const char *what, const SrcLoc &loc) {
  const Value &v = r.program().value(r.use(t, "matmul", loc));
  if (v.kind == ValueKind::Token)
    throw DTypeError(
        loc, "matmul",
        fmt::format("{} '{}' is a dependency token; pass it as `pred`, not as data", what, v.name));
  if (v.shmem >= 0)
    throw DTypeError(loc, "matmul",
                     fmt::format("{} '{}' is shmem data; read it with "
                                 "pto::distributed::shmem_get first",
                                 what, v.name));
  return v;
}

bool dtype_pair_ok(DataType in, DataType out) {
  switch (in) {
  case DT_FP16:
    return out == DT_FP16 || out == DT_FP32;
  case DT_BF16:
    return out == DT_BF16 || out == DT_FP32;
  case DT_FP32:
    return out == DT_FP32;
  case DT_INT8:
    return out == DT_INT32;
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_BOOL:
  case DT_DOUBLE:
  PTO_CASE_UNSUPPORTED_DTYPES:
    return false;
  }
  return false;
}

} // namespace

void set_cube_tile_shapes(const std::vector<int64_t> &m, const std::vector<int64_t> &k,
                          const std::vector<int64_t> &n, CubeTileOptions opts, SrcLoc loc) {
  const char *op = "set_cube_tile_shapes";
  auto &r = Recorder::current(op, loc);
  if (m.size() != 2)
    throw TileShapeError(loc, op, fmt::format("m needs 2 entries [mL0, mL1], got {}", m.size()));
  if (k.size() != 2 && k.size() != 3)
    throw TileShapeError(
        loc, op,
        fmt::format("k needs 2 entries [kL0, kL1] or 3 [kL0, kAL1, kBL1], got {}", k.size()));
  if (n.size() != 2)
    throw TileShapeError(loc, op, fmt::format("n needs 2 entries [nL0, nL1], got {}", n.size()));
  check_levels("m", m, loc);
  check_levels("k", k, loc);
  check_levels("n", n, loc);
  if (k[0] % 16 != 0)
    throw TileShapeError(loc, op, fmt::format("kL0 {} is not a multiple of 16 elements", k[0]));
  if (n[0] % 16 != 0)
    throw TileShapeError(loc, op, fmt::format("nL0 {} is not a multiple of 16 elements", n[0]));
  int64_t kb = k.size() == 3 ? k[2] : k[1];
  check_scratch(m[1], k[1], kb, n[1], loc);
  r.cube_tile.cube = {m[0], m[1], k[0], k[1], kb, n[0], n[1]};
  r.cube_tile.split_k = opts.enable_split_k;
}

CubeTileShapes get_cube_tile_shapes() {
  auto *r = Recorder::current_or_null();
  if (!r || r->cube_tile.cube.size() != 7)
    return {};
  const auto &c = r->cube_tile.cube;
  std::vector<int64_t> k{c[2], c[3]};
  if (c[4] != c[3])
    k.push_back(c[4]);
  return {{c[0], c[1]}, k, {c[5], c[6]}, r->cube_tile.split_k};
}

Tensor matmul(const Tensor &a, const Tensor &b, DataType out_dtype, MatmulOptions opts,
              SrcLoc loc) {
  const char *op = "matmul";
  auto &r = Recorder::current(op, loc);
  if (r.cube_tile.cube.empty())
    throw TileShapeError(loc, op, "no cube tile shape is set; call set_cube_tile_shapes first");
  // Copies: adding the output value below may move the program's value table.
  const Value va = operand(r, a, "a", loc);
  const Value vb = operand(r, b, "b", loc);
  const size_t rank = va.shape.size();
  if (rank < 2 || rank > 4)
    throw ShapeError(loc, op,
                     fmt::format("a '{}' has rank {}; matmul takes rank 2, 3 or 4", va.name, rank));
  if (vb.shape.size() != rank)
    throw ShapeError(loc, op,
                     fmt::format("a has rank {} and b rank {}; both operands need the same rank",
                                 rank, vb.shape.size()));
  if (va.dtype != vb.dtype)
    throw DTypeError(loc, op,
                     "operands have dtypes " + name(va.dtype) + " and " + name(vb.dtype) +
                         "; cast one of them");
  if (!dtype_pair_ok(va.dtype, out_dtype))
    throw DTypeError(loc, op,
                     name(va.dtype) + " x " + name(va.dtype) + " -> " + name(out_dtype) +
                         " is not supported; use fp16 -> fp16|fp32, bf16 -> bf16|fp32, "
                         "fp32 -> fp32 or int8 -> int32");
  const size_t mr = rank - 2, kr = rank - 1; // dims of M and K in a (swapped when a_trans)
  const size_t am = opts.a_trans ? kr : mr, ak = opts.a_trans ? mr : kr;
  const size_t bk = opts.b_trans ? kr : mr, bn = opts.b_trans ? mr : kr;
  if (!same_dim(va.shape[ak], vb.shape[bk]))
    throw ShapeError(loc, op,
                     fmt::format("K of a {} is {} but K of b {} is {}{}", str(va.shape),
                                 va.shape[ak].str(), str(vb.shape), vb.shape[bk].str(),
                                 opts.a_trans || opts.b_trans ? " (after the transposes)" : ""));
  std::vector<SymbolicScalar> shape, valid;
  for (size_t d = 0; d < mr; ++d) {
    const auto &da = va.shape[d], &db = vb.shape[d];
    if (same_dim(da, db)) {
      shape.push_back(da);
      valid.push_back(va.valid[d].same_as(vb.valid[d]) ? va.valid[d]
                                                       : min(va.valid[d], vb.valid[d]));
    } else if (is_one(da)) {
      shape.push_back(db);
      valid.push_back(vb.valid[d]);
    } else if (is_one(db)) {
      shape.push_back(da);
      valid.push_back(va.valid[d]);
    } else {
      throw ShapeError(loc, op,
                       fmt::format("batch dims of a {} and b {} do not broadcast", str(va.shape),
                                   str(vb.shape)));
    }
  }
  shape.push_back(va.shape[am]);
  valid.push_back(va.valid[am]);
  shape.push_back(vb.shape[bn]);
  valid.push_back(vb.valid[bn]);

  ir::Op o;
  o.kind = ir::OpKind::Matmul;
  o.where = loc;
  o.inputs = {va.id, vb.id};
  o.a_trans = opts.a_trans;
  o.b_trans = opts.b_trans;
  o.relu = opts.relu;
  o.tile = r.cube_tile;
  if (opts.bias) {
    const Value vbias = operand(r, *opts.bias, "bias", loc);
    const auto &n = shape.back();
    bool ok = vbias.shape.size() == 1   ? same_dim(vbias.shape[0], n)
              : vbias.shape.size() == 2 ? is_one(vbias.shape[0]) && same_dim(vbias.shape[1], n)
                                        : false;
    if (!ok)
      throw ShapeError(loc, op,
                       fmt::format("bias has shape {}; expected [1, {}] or [{}] (N of the output)",
                                   str(vbias.shape), n.str(), n.str()));
    if (vbias.dtype != out_dtype)
      throw DTypeError(loc, op,
                       "bias has dtype " + name(vbias.dtype) + "; expected the output dtype " +
                           name(out_dtype));
    o.inputs.push_back(vbias.id);
  }
  if (o.tile.split_k) {
    if (opts.bias || opts.relu)
      throw TileShapeError(loc, op, "enable_split_k cannot be combined with a bias or relu");
    if (out_dtype != DT_FP32 && out_dtype != DT_INT32)
      throw TileShapeError(loc, op,
                           "enable_split_k needs an fp32 or int32 output, got " + name(out_dtype));
  }
  Value out;
  out.kind = ValueKind::Local;
  out.dtype = out_dtype;
  out.shape = std::move(shape);
  out.valid = std::move(valid);
  ValueId oid = r.add_value(std::move(out));
  o.outputs = {oid};
  r.emit(std::move(o));
  // PyPTO: "if none is valid, matmul sets a 2-D [128, 128] vec tile itself", so that
  // `out[:] = matmul(...)` with only a cube tile set assembles its result (reference §3.4).
  if (rank == 2 && r.vec_tile.vec.empty())
    r.vec_tile.vec = {kMatmulDefaultVecTile, kMatmulDefaultVecTile};
  return r.tensor(oid);
}

} // namespace pto
