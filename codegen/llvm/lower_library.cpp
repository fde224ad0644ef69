// lower_library.cpp - See lower_library.h. The LLVM struct types here mirror XTensor and XCall of
// rtlib/xops.h field for field.
#include "llvm/lower_library.h"

#include "pto/error.h"

#include "rtlib/xops.h"

namespace pto::codegen {

using ir::ValueId;
using LV = llvm::Value;

namespace {

class LibraryCall {
public:
  LibraryCall(KernelBuilder &kb, const ir::Op &op)
      : kb_(kb), B(kb.builder()), op_(op), i64t_(B.getInt64Ty()), ptr_(B.getPtrTy()),
        dims_t_(llvm::ArrayType::get(i64t_, kXMaxRank)) {}

  void run() {
    std::vector<ValueId> ids = op_.inputs;
    ids.insert(ids.end(), op_.outputs.begin(), op_.outputs.end());
    LV *tensors = tensor_array(ids);
    LV *call = xcall(ids.size(), tensors);
    kb_.ret_if_error(kb_.call_rt("pto_rt_xop", B.getInt32Ty(), {call}));
  }

private:
  /// A run-time value to store into field `field` (dim `d` of an array field) of tensor `k`.
  struct Patch {
    LV *value;
    unsigned k, field, d;
  };

  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Op &op_;
  llvm::Type *i64t_, *ptr_;
  llvm::ArrayType *dims_t_;

  /// XTensor: ptr, dtype, rank, shape[R], valid[R], strides[R]
  llvm::StructType *xtensor_type() {
    return llvm::StructType::get(kb_.context(), {ptr_, i64t_, i64t_, dims_t_, dims_t_, dims_t_});
  }

  /// The XTensor array of `ids` on the stack. The descriptors are mostly compile-time
  /// constants: copy them from a constant global and store only the run-time fields (base
  /// pointers, symbolic extents). Field-by-field stores of every entry cost the SLP vectorizer a
  /// third of the compile time of library-heavy kernels.
  LV *tensor_array(const std::vector<ValueId> &ids) {
    auto *xt = xtensor_type();
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
      LV *field = B.CreateStructGEP(xt, t, pt.field);
      if (pt.field >= 3)
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
    auto as_const = [&](LV *x, unsigned f, unsigned d) -> llvm::Constant * {
      if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(x))
        return c;
      patches.push_back({x, k, f, d});
      return B.getInt64(0);
    };
    Addr a = kb_.addr(id);
    patches.push_back({a.base, k, 0, 0});
    std::vector<llvm::Constant *> shape(kXMaxRank, B.getInt64(0)), valid = shape, strides = shape;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      const auto du = static_cast<unsigned>(d);
      LV *sz = kb_.sym(v.shape[d]), *val = kb_.sym(v.valid[d]);
      LV *c = kb_.clamp_valid(val, sz);
      shape[d] = as_const(sz, 3, du);
      valid[d] = as_const(c, 4, du);
      strides[d] = as_const(a.strides[d], 5, du);
    }
    return llvm::ConstantStruct::get(
        xtensor_type(),
        {llvm::ConstantPointerNull::get(B.getPtrTy()), B.getInt64(static_cast<uint64_t>(v.dtype)),
         B.getInt64(v.shape.size()), llvm::ConstantArray::get(dims_t_, shape),
         llvm::ConstantArray::get(dims_t_, valid), llvm::ConstantArray::get(dims_t_, strides)});
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
    // XCall: ctx, site, kind, n_inputs, n_tensors, tensors, axis, keepdim, n_ints, ints,
    //        n_reals, reals, has_scalar, scalar_i
    auto *xc =
        llvm::StructType::get(kb_.context(), {ptr_, i64t_, i64t_, i64t_, i64t_, ptr_, i64t_, i64t_,
                                              i64t_, ptr_, i64t_, ptr_, i64t_, i64t_});
    LV *call = kb_.entry_alloca(xc, "xcall");
    std::vector<LV *> fields = {kb_.ctx_arg(),
                                kb_.i64(kb_.current_site()),
                                kb_.i64(static_cast<int64_t>(op_.kind)),
                                kb_.i64(static_cast<int64_t>(op_.inputs.size())),
                                kb_.i64(static_cast<int64_t>(n_tensors)),
                                tensors,
                                kb_.i64(op_.axis),
                                kb_.i64(op_.keepdim ? 1 : 0),
                                kb_.i64(static_cast<int64_t>(ints.size())),
                                const_array(i64t_, ints),
                                kb_.i64(static_cast<int64_t>(reals.size())),
                                const_array(B.getDoubleTy(), reals),
                                kb_.i64(op_.scalar ? 1 : 0),
                                kb_.i64(scalar_i)};
    for (unsigned f = 0; f < fields.size(); ++f)
      B.CreateStore(fields[f], B.CreateStructGEP(xc, call, f));
    return call;
  }
};

} // namespace

void lower_library(KernelBuilder &kb, const ir::Op &op) { LibraryCall(kb, op).run(); }

} // namespace pto::codegen
