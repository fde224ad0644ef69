// lower_library.cpp - See lower_library.h. XTensor and XCall (rtlib/xops.h) are built through
// their LLVM types and named field indices of abi_decls.h.
#include "llvm/lower_library.h"

#include "pto/error.h"

#include "llvm/abi_decls.h"
#include "rtlib/xops.h"

#include <iterator>
#include <utility>

namespace pto::codegen {

using ir::ValueId;
using LV = llvm::Value;

namespace {

class LibraryCall {
public:
  LibraryCall(KernelBuilder &kb, const ir::Op &op)
      : kb_(kb), B(kb.builder()), op_(op), i64t_(B.getInt64Ty()),
        dims_t_(llvm::ArrayType::get(i64t_, kXMaxRank)) {}

  void run() {
    std::vector<ValueId> ids = op_.inputs;
    ids.insert(ids.end(), op_.outputs.begin(), op_.outputs.end());
    LV *tensors = tensor_array(ids);
    LV *call = xcall(ids.size(), tensors);
    kb_.ret_if_error(kb_.call_rt(RtFn::Xop, {call}));
  }

private:
  /// A run-time value to store into field `field` (dim `d` of an array field) of tensor `k`.
  struct Patch {
    LV *value;
    unsigned k;
    XTensorField field;
    unsigned d;
  };

  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Op &op_;
  llvm::Type *i64t_;
  llvm::ArrayType *dims_t_;

  /// The XTensor array of `ids` on the stack. The descriptors are mostly compile-time
  /// constants: copy them from a constant global and store only the run-time fields (base
  /// pointers, symbolic extents). Field-by-field stores of every entry cost the SLP vectorizer a
  /// third of the compile time of library-heavy kernels.
  LV *tensor_array(const std::vector<ValueId> &ids) {
    auto *xt = xtensor_type(kb_.context());
    auto *arr_t = llvm::ArrayType::get(xt, ids.size());
    LV *arr = kb_.entry_alloca(arr_t, "xt");
    std::vector<Patch> patches;
    std::vector<llvm::Constant *> descs;
    for (size_t k = 0; k < ids.size(); ++k)
      descs.push_back(descriptor(ids[k], static_cast<unsigned>(k), patches));
    auto *init =
        new llvm::GlobalVariable(kb_.module(), arr_t, true, llvm::GlobalValue::PrivateLinkage,
                                 llvm::ConstantArray::get(arr_t, descs), "xop.desc");
    B.CreateMemCpy(arr, llvm::MaybeAlign(8), init, llvm::MaybeAlign(8),
                   kb_.module().getDataLayout().getTypeAllocSize(arr_t));
    for (const auto &pt : patches) {
      LV *t = B.CreateConstGEP2_32(arr_t, arr, 0, pt.k);
      LV *field = field_ptr(B, xt, t, pt.field);
      if (xt->getElementType(field_index(pt.field))->isArrayTy()) // shape, valid, strides
        field = B.CreateConstGEP2_32(dims_t_, field, 0, pt.d);
      B.CreateStore(pt.value, field);
    }
    return arr;
  }

  /// The constant XTensor of value `id` (tensor `k`), its run-time fields noted in `patches`.
  llvm::Constant *descriptor(ValueId id, unsigned k, std::vector<Patch> &patches) {
    const ir::Value &v = kb_.value(id);
    if (v.shape.size() > static_cast<size_t>(kXMaxRank))
      throw InternalError(op_.where, ir::op_info(op_.kind).name, "rank above kXMaxRank");
    auto as_const = [&](LV *x, XTensorField f, unsigned d) -> llvm::Constant * {
      if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(x))
        return c;
      patches.push_back({x, k, f, d});
      return B.getInt64(0);
    };
    Addr a = kb_.addr(id);
    patches.push_back({a.base, k, XTensorField::base, 0});
    std::vector<llvm::Constant *> shape(kXMaxRank, B.getInt64(0)), valid = shape, strides = shape;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      const auto du = static_cast<unsigned>(d);
      LV *sz = kb_.sym(v.shape[d]), *val = kb_.sym(v.valid[d]);
      LV *c = kb_.clamp_valid(val, sz);
      shape[d] = as_const(sz, XTensorField::shape, du);
      valid[d] = as_const(c, XTensorField::valid, du);
      strides[d] = as_const(a.strides[d], XTensorField::strides, du);
    }
    llvm::StructType *xt = xtensor_type(kb_.context());
    std::vector<llvm::Constant *> fields(xt->getNumElements());
    fields[field_index(XTensorField::base)] = llvm::ConstantPointerNull::get(B.getPtrTy());
    fields[field_index(XTensorField::dtype)] = B.getInt64(static_cast<uint64_t>(v.dtype));
    fields[field_index(XTensorField::rank)] = B.getInt64(v.shape.size());
    fields[field_index(XTensorField::shape)] = llvm::ConstantArray::get(dims_t_, shape);
    fields[field_index(XTensorField::valid)] = llvm::ConstantArray::get(dims_t_, valid);
    fields[field_index(XTensorField::strides)] = llvm::ConstantArray::get(dims_t_, strides);
    return llvm::ConstantStruct::get(xt, fields);
  }

  /// A constant global array of `elems` (null when empty).
  LV *const_array(llvm::Type *et, const std::vector<llvm::Constant *> &elems) {
    if (elems.empty())
      return llvm::ConstantPointerNull::get(B.getPtrTy());
    auto *at = llvm::ArrayType::get(et, elems.size());
    return new llvm::GlobalVariable(kb_.module(), at, true, llvm::GlobalValue::PrivateLinkage,
                                    llvm::ConstantArray::get(at, elems), "xop.attrs");
  }

  /// The XCall on the stack.
  LV *xcall(size_t n_tensors, LV *tensors) {
    std::vector<llvm::Constant *> ints, reals;
    for (auto v : op_.ints)
      ints.push_back(B.getInt64(static_cast<uint64_t>(v)));
    for (auto v : op_.reals)
      reals.push_back(llvm::ConstantFP::get(B.getDoubleTy(), v));
    int64_t scalar_i = 0;
    if (op_.scalar) {
      const double f = op_.scalar->is_int ? static_cast<double>(op_.scalar->i) : op_.scalar->f;
      reals.push_back(llvm::ConstantFP::get(B.getDoubleTy(), f));
      scalar_i = op_.scalar->is_int ? op_.scalar->i : xop_scalar_int(op_.scalar->f);
    }
    llvm::StructType *xc = xcall_type(kb_.context());
    LV *call = kb_.entry_alloca(xc, "xcall");
    const std::pair<XCallField, LV *> fields[] = {
        {XCallField::ctx, kb_.ctx_arg()},
        {XCallField::site, kb_.i64(kb_.current_site())},
        {XCallField::kind, kb_.i64(static_cast<int64_t>(op_.kind))},
        {XCallField::n_inputs, kb_.i64(static_cast<int64_t>(op_.inputs.size()))},
        {XCallField::n_tensors, kb_.i64(static_cast<int64_t>(n_tensors))},
        {XCallField::tensors, tensors},
        {XCallField::axis, kb_.i64(op_.axis)},
        {XCallField::keepdim, kb_.i64(op_.keepdim ? 1 : 0)},
        {XCallField::n_ints, kb_.i64(static_cast<int64_t>(ints.size()))},
        {XCallField::ints, const_array(i64t_, ints)},
        {XCallField::n_reals, kb_.i64(static_cast<int64_t>(reals.size()))},
        {XCallField::reals, const_array(B.getDoubleTy(), reals)},
        {XCallField::has_scalar, kb_.i64(op_.scalar ? 1 : 0)},
        {XCallField::scalar_i, kb_.i64(scalar_i)},
    };
    if (std::size(fields) != xc->getNumElements()) // every field stored: none left undefined
      throw InternalError(op_.where, ir::op_info(op_.kind).name,
                          "the XCall built misses fields of rtlib/xops.h's (a ptojit bug)");
    for (const auto &[f, value] : fields)
      B.CreateStore(value, field_ptr(B, xc, call, f));
    return call;
  }
};

} // namespace

void lower_library(KernelBuilder &kb, const ir::Op &op) { LibraryCall(kb, op).run(); }

} // namespace pto::codegen
