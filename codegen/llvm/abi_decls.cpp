// abi_decls.cpp - See abi_decls.h. The LLVM types are computed from the C++ declarations, so
// the only lists written here are the names of entry points and fields, and those are checked
// against the C++ structs at compile time.
#include "llvm/abi_decls.h"

#include "pto/error.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/pool.h"

#include "rtlib/run_check.h"
#include "rtlib/xops.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <array>
#include <cstddef>
#include <fmt/format.h>
#include <type_traits>

namespace pto::codegen {

namespace {

template <class> inline constexpr bool kNotAnAbiType = false;

/// The LLVM type of a C++ type of the ABI: fixed-width integers, double, pointers (opaque
/// `ptr`), arrays of those, and void.
template <class T> llvm::Type *llvm_type(llvm::LLVMContext &c) {
  if constexpr (std::is_void_v<T>)
    return llvm::Type::getVoidTy(c);
  else if constexpr (std::is_pointer_v<T>)
    return llvm::PointerType::getUnqual(c);
  else if constexpr (std::is_array_v<T>)
    return llvm::ArrayType::get(llvm_type<std::remove_extent_t<T>>(c), std::extent_v<T>);
  else if constexpr (std::is_same_v<T, double>)
    return llvm::Type::getDoubleTy(c);
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return llvm::IntegerType::get(c, 8 * sizeof(T));
  else
    static_assert(kNotAnAbiType<T>, "no LLVM type for this C++ type of the ABI");
}

/// The LLVM function type of a C function.
template <class R, class... A> llvm::FunctionType *fn_type(llvm::LLVMContext &c, R (*)(A...)) {
  return llvm::FunctionType::get(llvm_type<R>(c), {llvm_type<A>(c)...}, false);
}

struct Entry {
  const char *name;
  void *address;
  llvm::FunctionType *(*type)(llvm::LLVMContext &);
};

#define PTO_RT_ROW(e, sym)                                                                         \
  Entry{#sym, reinterpret_cast<void *>(&(sym)),                                                    \
        [](llvm::LLVMContext &c) { return fn_type(c, &(sym)); }},
const Entry kEntries[] = {PTO_RT_ENTRY_POINTS(PTO_RT_ROW)};
#undef PTO_RT_ROW

const Entry &entry(RtFn fn) { return kEntries[static_cast<size_t>(fn)]; }

std::string str(const llvm::Type *t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t->print(os);
  return os.str();
}

[[noreturn]] void abi_bug(const std::string &detail) {
  throw InternalError("<codegen>", "abi_decls", detail + " (a ptojit bug; rerun with PTO_DUMP=ir)");
}

// ---- struct layouts ------------------------------------------------------------------------

struct Field {
  const char *name;
  size_t offset;
  size_t size;
  llvm::Type *(*type)(llvm::LLVMContext &);
};

#define PTO_FIELD_ROW(S, f)                                                                        \
  Field{#f, offsetof(S, f), sizeof(decltype(S::f)), &llvm_type<decltype(S::f)>},
#define PTO_BLOCK_ROW(f) PTO_FIELD_ROW(pto_block, f)
#define PTO_XTENSOR_ROW(f) PTO_FIELD_ROW(XTensor, f)
#define PTO_XCALL_ROW(f) PTO_FIELD_ROW(XCall, f)
constexpr std::array kBlockFields{PTO_BLOCK_FIELDS(PTO_BLOCK_ROW)};
constexpr std::array kXTensorFields{PTO_XTENSOR_FIELDS(PTO_XTENSOR_ROW)};
constexpr std::array kXCallFields{PTO_XCALL_FIELDS(PTO_XCALL_ROW)};
#undef PTO_XCALL_ROW
#undef PTO_XTENSOR_ROW
#undef PTO_BLOCK_ROW
#undef PTO_FIELD_ROW

/// True when `fields` lie back to back from offset 0 to the end of S: every field of S is
/// listed, in order (the structs have no padding).
template <class S, size_t N> constexpr bool tiles(const std::array<Field, N> &fields) {
  size_t at = 0;
  for (const Field &f : fields) {
    if (f.offset != at)
      return false;
    at += f.size;
  }
  return at == sizeof(S);
}
static_assert(tiles<pto_block>(kBlockFields), "PTO_BLOCK_FIELDS must list pto_block's fields");
static_assert(tiles<XTensor>(kXTensorFields), "PTO_XTENSOR_FIELDS must list XTensor's fields");
static_assert(tiles<XCall>(kXCallFields), "PTO_XCALL_FIELDS must list XCall's fields");

template <size_t N>
llvm::StructType *named_struct(llvm::LLVMContext &c, const char *name,
                               const std::array<Field, N> &fields) {
  if (auto *t = llvm::StructType::getTypeByName(c, name))
    return t;
  std::vector<llvm::Type *> elems;
  for (const Field &f : fields)
    elems.push_back(f.type(c));
  return llvm::StructType::create(c, elems, name);
}

template <size_t N>
void check_layout(const llvm::DataLayout &dl, llvm::StructType *t, size_t size,
                  const std::array<Field, N> &fields) {
  const llvm::StructLayout *sl = dl.getStructLayout(t);
  const std::string name = t->getName().str();
  for (size_t i = 0; i < N; ++i)
    if (sl->getElementOffset(static_cast<unsigned>(i)) != fields[i].offset)
      abi_bug(fmt::format("{}::{} is at byte {} in the LLVM type but at byte {} in C++", name,
                          fields[i].name, sl->getElementOffset(static_cast<unsigned>(i)),
                          fields[i].offset));
  if (sl->getSizeInBytes() != size)
    abi_bug(fmt::format("{} is {} bytes in the LLVM type but {} in C++", name, sl->getSizeInBytes(),
                        size));
}

} // namespace

static_assert(sizeof(pto_dtype) == sizeof(DataType), "pto_dtype carries DataType ordinals");

const char *rt_name(RtFn fn) { return entry(fn).name; }

llvm::FunctionType *rt_type(llvm::LLVMContext &c, RtFn fn) { return entry(fn).type(c); }

std::vector<std::pair<std::string, void *>> rt_symbols() {
  std::vector<std::pair<std::string, void *>> out;
  for (const Entry &e : kEntries)
    out.emplace_back(e.name, e.address);
  return out;
}

llvm::Function *declare_rt(llvm::Module &m, RtFn fn) {
  llvm::FunctionType *t = rt_type(m.getContext(), fn);
  if (llvm::Function *f = m.getFunction(rt_name(fn))) {
    if (f->getFunctionType() != t)
      abi_bug(fmt::format("{} is already declared as {}, not as its C type {}", rt_name(fn),
                          str(f->getFunctionType()), str(t)));
    return f;
  }
  if (m.getNamedValue(rt_name(fn)))
    abi_bug(fmt::format("{} names a global that is not a function", rt_name(fn)));
  return llvm::Function::Create(t, llvm::Function::ExternalLinkage, rt_name(fn), m);
}

llvm::CallInst *call_rt(llvm::IRBuilderBase &b, RtFn fn, llvm::ArrayRef<llvm::Value *> args) {
  llvm::Function *f = declare_rt(*b.GetInsertBlock()->getModule(), fn);
  llvm::FunctionType *t = f->getFunctionType();
  if (args.size() != t->getNumParams())
    abi_bug(fmt::format("{} takes {} arguments, but the call passes {}", rt_name(fn),
                        t->getNumParams(), args.size()));
  for (unsigned i = 0; i < args.size(); ++i)
    if (args[i]->getType() != t->getParamType(i))
      abi_bug(fmt::format("argument {} of {} is {}, but its C declaration takes {}", i, rt_name(fn),
                          str(args[i]->getType()), str(t->getParamType(i))));
  return b.CreateCall(f, args);
}

llvm::FunctionType *kernel_type(llvm::LLVMContext &c) {
  return fn_type(c, static_cast<pto_kernel_fn>(nullptr));
}

llvm::StructType *block_type(llvm::LLVMContext &c) {
  return named_struct(c, "pto_block", kBlockFields);
}
llvm::StructType *xtensor_type(llvm::LLVMContext &c) {
  return named_struct(c, "XTensor", kXTensorFields);
}
llvm::StructType *xcall_type(llvm::LLVMContext &c) {
  return named_struct(c, "XCall", kXCallFields);
}

void check_abi_layouts(const llvm::DataLayout &dl) {
  llvm::LLVMContext c;
  check_layout(dl, block_type(c), sizeof(pto_block), kBlockFields);
  check_layout(dl, xtensor_type(c), sizeof(XTensor), kXTensorFields);
  check_layout(dl, xcall_type(c), sizeof(XCall), kXCallFields);
}

} // namespace pto::codegen
