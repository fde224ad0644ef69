// abi_test.cpp - The typed ABI between generated code and C++ (codegen/llvm/abi_decls.h) and the
// SLEEF table (codegen/llvm/vector_math.h): every symbol the lowering can name resolves in the
// JIT to the C function of that name, LLVM's declarations and struct layouts match the C++ ones,
// and a call that does not match its declaration is refused. Expected signatures are spelled out
// by hand from pto/runtime/abi.h; symbol addresses come from the dynamic linker (dlsym) or the
// C++ declarations, not from the tables under test.
#include "pto/error.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/pool.h"

#include "llvm/abi_decls.h"
#include "llvm/host_target.h"
#include "llvm/jit_engine.h"
#include "llvm/vector_math.h"
#include "rtlib/xops.h"

#include <doctest/doctest.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <dlfcn.h>
#include <set>
#include <string>

using namespace pto::codegen;

namespace {

std::string str(const llvm::Type *t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t->print(os);
  return os.str();
}

const char *isa_name(Isa isa) {
  switch (isa) {
  case Isa::Sse2:
    return "sse2";
  case Isa::Sse4:
    return "sse4";
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512";
  }
  return "?";
}

/// Runs `f` and returns the InternalError's message ("" and a failed check if it threw none).
template <class F> std::string internal_error(F &&f) {
  try {
    f();
  } catch (const pto::InternalError &e) {
    return e.what();
  }
  FAIL_CHECK("no InternalError");
  return "";
}

} // namespace

TEST_CASE("vector_math: SLEEF names follow SLEEF's scheme at each level") {
  CHECK(sleef_name("exp", "u10", false, Isa::Avx512) == "Sleef_expf16_u10avx512f");
  CHECK(sleef_name("exp", "u10", true, Isa::Avx512) == "Sleef_expd8_u10avx512f");
  CHECK(sleef_name("erfc", "u15", false, Isa::Avx2) == "Sleef_erfcf8_u15avx2");
  CHECK(sleef_name("hypot", "u05", true, Isa::Sse4) == "Sleef_hypotd2_u05sse4");
  CHECK(sleef_name("fmod", "", false, Isa::Sse2) == "Sleef_fmodf4_sse2");
  CHECK(sleef_lanes(Isa::Avx2, false) == 8);
  CHECK(sleef_lanes(Isa::Avx512, true) == 8);
  // A function or accuracy outside the table is a ptojit bug, not a name to emit.
  CHECK(internal_error([] {
          sleef_name("exp", "u35", false, Isa::Avx2);
        }).find("SLEEF function 'exp' at accuracy 'u35' is not in sleef_functions()") !=
        std::string::npos);
  CHECK(internal_error([] { sleef_name("gamma", "u10", false, Isa::Avx2); }).find("'gamma'") !=
        std::string::npos);
}

TEST_CASE("vector_math: every SLEEF name the lowering can emit resolves in the JIT, every level") {
  // The lowering names SLEEF functions only through sleef_name (which refuses anything outside
  // the table), so this covers every name it can emit on this CPU and on any other level.
  std::set<std::string> names;
  for (Isa isa : kIsas) {
    CAPTURE(isa_name(isa));
    for (const SleefFunction &f : sleef_functions()) {
      for (bool dbl : {false, true}) {
        const std::string name = sleef_name(f.fn, f.acc, dbl, isa);
        CAPTURE(name);
        void *expected = dlsym(RTLD_DEFAULT, name.c_str()); // SLEEF's own symbol
        CHECK(expected != nullptr);
        CHECK(jit_symbol_address(name) == expected);
        names.insert(name);
      }
    }
  }
  // The JIT binds exactly those, once each.
  CHECK(sleef_symbols().size() == names.size());
  for (const auto &[name, addr] : sleef_symbols())
    CHECK(names.count(name) == 1);
  CHECK(jit_symbol_address("Sleef_expf16_u35avx512f") == nullptr); // not in the table
}

TEST_CASE("abi_decls: every runtime entry point resolves in the JIT to its C function") {
  CHECK(jit_symbol_address("pto_rt_put") == reinterpret_cast<void *>(&pto_rt_put));
  CHECK(jit_symbol_address("pto_rt_fail") == reinterpret_cast<void *>(&pto_rt_fail));
  CHECK(jit_symbol_address("pto_rt_xop") == reinterpret_cast<void *>(&pto_rt_xop));
  CHECK(jit_symbol_address("pto_rt_alloc") == reinterpret_cast<void *>(&pto_rt_alloc));
  CHECK(jit_symbol_address("pto_rt_heap_table") == reinterpret_cast<void *>(&pto_rt_heap_table));
  CHECK(jit_symbol_address("pto_rt_heap_zeroing") ==
        reinterpret_cast<void *>(&pto_rt_heap_zeroing));
  CHECK(jit_symbol_address("pto_rt_parallel_for") ==
        reinterpret_cast<void *>(&pto_rt_parallel_for));
  CHECK(rt_symbols().size() == 26);
  for (const auto &[name, addr] : rt_symbols()) {
    CAPTURE(name);
    CHECK(addr != nullptr);
    CHECK(jit_symbol_address(name) == addr);
  }
}

TEST_CASE("abi_decls: LLVM function types are the C declarations' (abi.h)") {
  llvm::LLVMContext c;
  CHECK(str(rt_type(c, RtFn::Put)) ==
        "i32 (ptr, i32, i32, i32, ptr, i32, i64, i64, i32, ptr, i32)");
  CHECK(str(rt_type(c, RtFn::Get)) == "i32 (ptr, i32, i32, i64, i64, i32, ptr, i32, ptr, i32)");
  CHECK(str(rt_type(c, RtFn::WaitUntil)) == "i32 (ptr, i32, i64, i32, i32, i32, i64, i32)");
  CHECK(str(rt_type(c, RtFn::KernelEnter)) == "i32 (ptr, ptr, i32, ptr, ptr, ptr, ptr, ptr)");
  CHECK(str(rt_type(c, RtFn::Fail)) == "i32 (ptr, i32, i32, i64, i64)");
  CHECK(str(rt_type(c, RtFn::CheckFail)) == "i32 (ptr, i32, i32, ptr, ptr, i64)");
  CHECK(str(rt_type(c, RtFn::Alloc)) == "ptr (ptr, i64, i32)");
  CHECK(str(rt_type(c, RtFn::TraceNow)) == "i64 (ptr)");
  CHECK(str(rt_type(c, RtFn::TraceOp)) == "void (ptr, i32, i32, i64)");
  CHECK(str(rt_type(c, RtFn::Xop)) == "i32 (ptr)");
  CHECK(str(rt_type(c, RtFn::Fence)) == "i32 (ptr, i32)");
  CHECK(str(rt_type(c, RtFn::Quiet)) == "i32 (ptr, i32)");
  CHECK(str(rt_type(c, RtFn::PutSignal)) ==
        "i32 (ptr, i32, i32, i32, ptr, i32, i64, i64, i32, ptr, i64, i32, i32, i32)");
  CHECK(str(rt_type(c, RtFn::Atomic)) ==
        "i32 (ptr, i32, i32, i32, i32, i64, i64, ptr, ptr, ptr, i32, i32)");
  CHECK(str(rt_type(c, RtFn::WaitUntilSet)) ==
        "i32 (ptr, i32, i32, i32, ptr, i32, i32, i64, ptr, i64, i64, i32, i32, i32, ptr, i64, "
        "ptr, i32)");
  CHECK(str(kernel_type(c)) == "i32 (ptr, ptr, ptr)");
  CHECK(std::string(rt_name(RtFn::WaitUntil)) == "pto_rt_wait_until");
}

TEST_CASE("abi_decls: call_rt refuses arguments that differ from the C declaration") {
  llvm::LLVMContext c;
  llvm::Module m("abi_test", c);
  auto *f = llvm::Function::Create(kernel_type(c), llvm::Function::ExternalLinkage, "k", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  llvm::Value *ctx = f->getArg(0);
  // A matching call is emitted against the one declaration.
  llvm::CallInst *ok =
      call_rt(b, RtFn::Fail,
              {ctx, b.getInt32(PTO_FAIL_INDEX), b.getInt32(0), b.getInt64(7), b.getInt64(4)});
  CHECK(ok->getCalledFunction() == m.getFunction("pto_rt_fail"));
  CHECK(str(ok->getFunctionType()) == "i32 (ptr, i32, i32, i64, i64)");
  // An i32 where the runtime reads an i64 would read garbage: refused, naming the argument.
  CHECK(internal_error([&] {
          call_rt(b, RtFn::Fail, {ctx, b.getInt32(2), b.getInt32(0), b.getInt32(7), b.getInt64(4)});
        }).find("argument 3 of pto_rt_fail is i32, but its C declaration takes i64") !=
        std::string::npos);
  CHECK(internal_error([&] {
          call_rt(b, RtFn::Fail, {ctx, b.getInt32(2)});
        }).find("pto_rt_fail takes 5 arguments, but the call passes 2") != std::string::npos);
  // A module that declared the symbol with another type cannot get a second declaration.
  llvm::Module other("other", c);
  llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, false),
                         llvm::Function::ExternalLinkage, "pto_rt_alloc", other);
  CHECK(internal_error([&] { declare_rt(other, RtFn::Alloc); })
            .find("pto_rt_alloc is already declared as i32 (ptr), not as its C type ptr (ptr, "
                  "i64, i32)") != std::string::npos);
}

TEST_CASE("abi_decls: struct types place every field where C++ does") {
  llvm::LLVMContext c;
  CHECK(str(block_type(c)) == "%pto_block = type { [4 x i64], [4 x i64], [4 x i64] }");
  CHECK(str(xtensor_type(c)) ==
        "%XTensor = type { ptr, i64, i64, [8 x i64], [8 x i64], [8 x i64] }");
  CHECK(xcall_type(c)->getNumElements() == 14);
  CHECK(static_cast<unsigned>(XCallField::tensors) == 5);
  CHECK(static_cast<unsigned>(XCallField::scalar_i) == 13);
  CHECK(static_cast<unsigned>(BlockField::dst_stride) == 2);
  // On the host's data layout the LLVM offsets are offsetof's.
  const llvm::DataLayout host = host_target().tm->createDataLayout();
  CHECK_NOTHROW(check_abi_layouts(host));
  const llvm::StructLayout *xc = host.getStructLayout(xcall_type(c));
  CHECK(xc->getElementOffset(static_cast<unsigned>(XCallField::reals)) == offsetof(XCall, reals));
  CHECK(xc->getSizeInBytes() == sizeof(XCall));
  // Under a layout with 4-byte pointers XTensor's fields move: the check names the first one.
  CHECK(internal_error([] {
          check_abi_layouts(llvm::DataLayout("e-p:32:32"));
        }).find("XTensor::dtype is at byte 4 in the LLVM type but at byte 8 in C++") !=
        std::string::npos);
}
