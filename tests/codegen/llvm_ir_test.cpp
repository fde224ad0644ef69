// llvm_ir_test.cpp - Golden tests of the LLVM IR the lowering writes: for a handful of kernels,
// LLVM's FileCheck (llvm-19-tools; scripts/bootstrap.sh installs it) checks the lowered module
// (before O3, codegen::lowered_llvm_ir), so that a change which silently un-fuses softmax,
// splits an elementwise chain, stops pipelining a put with its signal or un-vectorizes the code
// fails here, with FileCheck's report of the line it looked for.
//
// The checks name blocks, runtime entry points and SLEEF functions, never value names, and
// match vector widths and SLEEF's ISA suffix by pattern, so they hold at every PTO_ISA level.
// They sit next to their kernel below; FileCheck reads them from a temporary file.
#include "pto/pto.h"

#include "llvm/host_isa.h"
#include "llvm/lower_llvm.h"
#include "llvm/lower_matmul_geometry.h"
#include "passes/planned.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace dist = pto::distributed;
using passes_test::plan;

namespace {

constexpr pto::DataType F32 = pto::DT_FP32;
using Args = std::vector<pto::Tensor>;

/// The lowered LLVM IR of `c`, with the options the environment gives (PTO_ISA).
std::string lowered(const pto::codegen::Compiled &c) {
  auto opts = pto::codegen::CompileOptions::from_env(std::source_location::current(),
                                                     c.planned->program.name);
  return pto::codegen::lowered_llvm_ir(*c.planned, opts);
}

/// Runs FileCheck with `checks` over `ir`; returns "" when they hold, else FileCheck's report.
std::string file_check(const std::string &name, const std::string &checks, const std::string &ir) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("pto_llvm_ir_test." + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path check_file = dir / (name + ".check"), ir_file = dir / (name + ".ll"),
                 out_file = dir / (name + ".out");
  std::ofstream(check_file) << checks;
  std::ofstream(ir_file) << ir;
  const std::string cmd = std::string(PTO_FILECHECK) + " --dump-input=never " +
                          check_file.string() + " --input-file=" + ir_file.string() + " >" +
                          out_file.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string report;
  if (rc != 0) {
    std::ifstream in(out_file);
    report.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (report.empty())
      report = "FileCheck (" + std::string(PTO_FILECHECK) + ") could not run: status " +
               std::to_string(rc);
    report += "\nthe module: " + ir_file.string() + " (kept)";
  } else {
    for (const fs::path &f : {check_file, ir_file, out_file})
      fs::remove(f);
  }
  return report;
}

/// Runs each of `check_sets` (one FileCheck run each) over the lowered IR of `c`.
void check_ir(const std::string &name, const pto::codegen::Compiled &c,
              const std::vector<std::string> &check_sets) {
  const std::string ir = lowered(c);
  for (size_t k = 0; k < check_sets.size(); ++k) {
    const std::string report = file_check(name + "." + std::to_string(k), check_sets[k], ir);
    CHECK_MESSAGE(report.empty(), "the lowered IR of " << name << " fails check set " << k << ":\n"
                                                       << report);
  }
}

// Block labels as the lowering names them: "tile" (the tile loop of a fused group), "row" (its
// rows), "vec" (a vector pass over a row; a row pass is one "vec" loop and its masked tail),
// "st" (a shmem op's tile loop, one per dim), "uk" (the matmul micro-kernel). LLVM numbers
// repeated names (vec.body6).
constexpr const char *kOneTileLoop = R"(
CHECK-COUNT-1: {{^}}tile.head{{[0-9]*}}:
CHECK-NOT:     {{^}}tile.head{{[0-9]*}}:
)";
constexpr const char *kOneRowLoop = R"(
CHECK-COUNT-1: {{^}}row.head{{[0-9]*}}:
CHECK-NOT:     {{^}}row.head{{[0-9]*}}:
)";

} // namespace

// ---- softmax: one fused loop nest, three row passes, vector exp -----------------------------

TEST_CASE("llvm ir: softmax is one tile loop with three row passes and a vector exp") {
  auto c = plan("softmax", {{F32, {64, 256}}, {F32, {64, 256}}}, [](const Args &a) {
    pto::set_vec_tile_shapes(16, 256);
    pto::assemble(pto::softmax(a[0], -1), {0, 0}, a[1]);
  });
  // One tile loop and, inside it, one row loop with three vector passes over the row: the max,
  // the sum of exp (a SLEEF vector exp), then one division per row for the reciprocal of the sum
  // and a multiply per element in the scaled store; then no second tile loop.
  check_ir("softmax", c,
           {kOneTileLoop, kOneRowLoop, R"(
CHECK-COUNT-3: {{^}}vec.body{{[0-9]*}}:
CHECK-NOT:     {{^}}vec.body{{[0-9]*}}:
)",
            R"(
CHECK-LABEL: define {{.*}}@pto_kernel(
CHECK:       {{^}}vec.body:
CHECK:       call <16 x float> @llvm.maximum.v16f32
CHECK:       {{^}}vec.body{{[0-9]+}}:
CHECK:       call <{{[0-9]+}} x float> @Sleef_expf{{[0-9]+}}_u10
CHECK:       fadd <16 x float>
CHECK:       fdiv <16 x float> <float 1.000000e+00
CHECK:       {{^}}vec.body{{[0-9]+}}:
CHECK-NOT:   fdiv
CHECK:       fmul <16 x float>
)"});
}

// ---- an elementwise chain: one loop -----------------------------------------------------------

TEST_CASE("llvm ir: an elementwise chain is one tile loop of vector code") {
  auto c = plan("chain", {{F32, {32, 128}}, {F32, {32, 128}}}, [](const Args &a) {
    pto::set_vec_tile_shapes(8, 128);
    auto x = a[0];
    pto::assemble(pto::relu(pto::add(pto::mul(pto::exp(x), 2.0), x)), {0, 0}, a[1]);
  });
  // One row pass: exp, the multiply, the add and the relu in one vector body.
  check_ir("chain", c,
           {kOneTileLoop, kOneRowLoop, R"(
CHECK-COUNT-1: {{^}}vec.body{{[0-9]*}}:
CHECK-NOT:     {{^}}vec.body{{[0-9]*}}:
)",
            R"(
CHECK:      {{^}}vec.body:
CHECK:      load <16 x float>
CHECK:      call <{{[0-9]+}} x float> @Sleef_expf{{[0-9]+}}_u10
CHECK:      fmul <16 x float>
CHECK-NEXT: fadd <16 x float>
CHECK-NEXT: call <16 x float> @llvm.maximum.v16f32
)"});
}

// ---- put + signal: pipelined per tile, also across a run-time Check --------------------------

/// A put into PE `dst` of a 16 x 128 window in tiles of 8 x 128, then its signal, as
/// samples/allreduce_softmax.cpp writes them. `dst` read from a tensor element puts a run-time
/// Check op (dst in [0, n_pes)) between the put and the signal.
void put_signal_kernel(const Args &a, bool dst_from_tensor) {
  pto::set_vec_tile_shapes(8, 128);
  auto acc = dist::create_shmem_tensor("world", 2, F32, {16, 128});
  pto::SymbolicScalar dst = dst_from_tensor ? a[1].at({0}) : pto::SymbolicScalar(1);
  auto put = dist::shmem_put(a[0], {0, 0}, acc, dst, {.put_op = dist::AtomicType::ADD});
  dist::shmem_signal(acc, dst, 1, dst, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
}

/// One tile loop nest (one "st" loop per dim of the 2-D window) holds the put and the signal:
/// pipelined. Unpipelined, each op would have its own two loops.
constexpr const char *kPipelined = R"(
CHECK-COUNT-2: {{^}}st.head{{[0-9]*}}:
CHECK-NOT:     {{^}}st.head{{[0-9]*}}:
)";
constexpr const char *kPutAndSignal = R"(
CHECK-COUNT-1: call i32 @pto_rt_put(
CHECK-NOT:     call i32 @pto_rt_put(
CHECK-COUNT-2: call i32 @pto_rt_signal(
CHECK-NOT:     call i32 @pto_rt_signal(
)"; // the signal's runtime path and its wake of a sleeping PE (lower_shmem_direct.h)

TEST_CASE("llvm ir: a put and its signal run in one tile loop") {
  auto c = plan(
      "put_signal", {{F32, {16, 128}}, {pto::DT_INT32, {1}}},
      [](const Args &a) { put_signal_kernel(a, false); }, 2);
  check_ir("put_signal", c, {kPipelined, kPutAndSignal});
}

TEST_CASE("llvm ir: a run-time Check between a put and its signal does not stop pipelining") {
  auto c = plan(
      "put_check_signal", {{F32, {16, 128}}, {pto::DT_INT32, {1}}},
      [](const Args &a) { put_signal_kernel(a, true); }, 2);
  // The Check ops sit between the put and the signal in the plan...
  const auto &items = c.planned->items(c.planned->program.body);
  std::vector<pto::ir::OpKind> kinds;
  for (const auto &item : items)
    if (item.op != pto::codegen::kNoOp)
      kinds.push_back(c.planned->sites.op(item.op).kind);
  auto put = std::find(kinds.begin(), kinds.end(), pto::ir::OpKind::ShmemPut);
  REQUIRE(put != kinds.end());
  REQUIRE(put + 1 != kinds.end());
  CHECK(put[1] == pto::ir::OpKind::Check);
  // ...and the lowering runs them first, then the pair in one tile loop.
  check_ir("put_check_signal", c, {kPipelined, kPutAndSignal, R"(
CHECK:     call i32 @pto_rt_check_fail(
CHECK:     call i32 @pto_rt_check_fail(
CHECK-NOT: {{^}}st.head{{[0-9]*}}:
CHECK:     call i32 @pto_rt_check_fail(
CHECK:     {{^}}st.head:
)"});
}

// ---- the shared-memory fast path: direct puts, borrowed gets ----------------------------------

TEST_CASE("llvm ir: a SET put copies straight into the peer's heap; the runtime is the fallback") {
  auto c = plan(
      "direct_put", {{F32, {16, 128}}},
      [](const Args &a) {
        pto::set_vec_tile_shapes(8, 128);
        auto buf = dist::create_shmem_tensor("world", 2, F32, {16, 128});
        dist::shmem_put(a[0], {0, 0}, buf, 1);
      },
      2);
  // The bases come once per kernel entry; per tile the direct block copies with memcpy, the
  // other block (no base: MPI, tracing, PTO_SHMEM_DIRECT=0) calls pto_rt_put.
  check_ir("direct_put", c, {R"(
CHECK:         call i32 @pto_rt_kernel_enter(
CHECK:         call i32 @pto_rt_heap_table(
CHECK:         {{^}}put.direct:
CHECK:         {{^}}put.runtime:
CHECK-COUNT-1: call i32 @pto_rt_put(
CHECK-NOT:     call i32 @pto_rt_put(
CHECK:         {{^}}direct.block:
CHECK-NOT:     {{^}}direct.rows:
CHECK:         call void @llvm.memcpy
CHECK:         {{^}}direct.row.body:
CHECK:         call void @llvm.memcpy
)"});
}

TEST_CASE("llvm ir: a signal is a release store and a wait an acquire poll in generated code") {
  auto c = plan(
      "direct_signal", {{F32, {8, 128}}},
      [](const Args &a) {
        pto::set_vec_tile_shapes(8, 128);
        auto buf = dist::create_shmem_tensor("world", 2, F32, {8, 128});
        auto me = dist::my_symbolic_pe("world");
        auto sent = dist::shmem_signal(buf, 1, 3, 1, {.pred = {a[0]}});
        dist::shmem_wait_until(buf, me, 3, {.clear_signal = true, .pred = {sent}});
      },
      2);
  // The signal: a release store, a seq_cst fence, the sleep flag read (pto_rt_signal wakes a
  // sleeping PE), else (no flags: MPI, tracing, PTO_SHMEM_DIRECT=0) pto_rt_signal. The wait: a
  // bounded poll of acquire loads, the clear an atomic sub, else pto_rt_wait_until.
  check_ir("direct_signal", c, {R"(
CHECK:     call i32 @pto_rt_heap_table(
CHECK:     {{^}}signal.direct:
CHECK:     store atomic i32 3, ptr %{{.*}} release
CHECK:     fence seq_cst
CHECK:     load atomic i32, ptr %{{.*}} monotonic
CHECK:     {{^}}signal.runtime:
CHECK:     call i32 @pto_rt_signal(
CHECK:     {{^}}signal.wake:
CHECK:     call i32 @pto_rt_signal(
CHECK:     {{^}}wait.poll:
CHECK:     load atomic i32, ptr %{{.*}} acquire
CHECK:     {{^}}wait.hit:
CHECK:     atomicrmw sub ptr %{{.*}}, i32 %slot acq_rel
CHECK:     {{^}}wait.runtime:
CHECK:     call i32 @pto_rt_wait_until(
)"});
}

TEST_CASE("llvm ir: an allreduce's reduction reads its staged blocks in the heap, no get call") {
  auto c = plan(
      "direct_allreduce", {{F32, {32, 128}}, {F32, {32, 128}}},
      [](const Args &a) {
        pto::set_vec_tile_shapes(8, 128);
        pto::assemble(dist::allreduce(a[0], dist::Reduction::SUM,
                                      {.algorithm = dist::AllreduceAlgorithm::RS_AG}),
                      {0, 0}, a[1]);
      },
      2);
  // Both terms of the ordered sum are borrowed (the heap window is the operand: the copy in
  // get.copy runs only without bases), so the fused add loop loads the heap: no call inside.
  // The gets may sit in an outlined chunk whose block order CodeExtractor chooses: -DAG.
  check_ir("direct_allreduce", c, {R"(
CHECK:     call i32 @pto_rt_heap_table(
CHECK-DAG: {{^}}get.copy:
CHECK-DAG: {{^}}get.borrowed:
CHECK-DAG: {{^}}get.copy{{[0-9]+}}:
CHECK-DAG: {{^}}get.borrowed{{[0-9]+}}:
CHECK-DAG: call i32 @pto_rt_get(
CHECK:     {{^}}vec.body{{[0-9]*}}:
CHECK-NOT: call
CHECK:     load <{{[0-9]+}} x float>
CHECK-NOT: call
CHECK:     load <{{[0-9]+}} x float>
CHECK-NOT: call
CHECK:     fadd <{{[0-9]+}} x float>
)"});
}

// ---- matmul: the packed micro-kernel ----------------------------------------------------------

TEST_CASE("llvm ir: the matmul micro-kernel's vector width and bf16 instruction follow the "
          "target") {
  namespace cg = pto::codegen;
  const cg::JitTarget &t = cg::jit_target();
  const bool zmm = t.isa >= cg::Isa::Avx512,
             bf16_dot = zmm && cg::target_has_feature(t, "avx512bf16");
  auto mm = [](pto::DataType dt) {
    return plan("mm_width", {{dt, {40, 70}}, {dt, {70, 50}}, {F32, {40, 50}}}, [](const Args &a) {
      pto::set_vec_tile_shapes(16, 50);
      pto::set_cube_tile_shapes({16, 32}, {16, 64}, {16, 48});
      pto::assemble(pto::matmul(a[0], a[1], F32), {0, 0}, a[2]);
    });
  };
  const std::string f32 = lowered(mm(F32));
  CHECK(f32.find(zmm ? "@llvm.fma.v16f32" : "@llvm.fma.v8f32") != std::string::npos);
  struct Reset {
    ~Reset() { cg::set_matmul_dpbf16_for_tests(std::nullopt); }
  } reset;
  for (bool dp : {true, false}) {
    CAPTURE(dp);
    cg::set_matmul_dpbf16_for_tests(dp);
    const std::string bf = lowered(mm(pto::DT_BF16));
    const bool has_dot = bf.find("@llvm.x86.avx512bf16.dpbf16ps.512") != std::string::npos;
    CHECK(has_dot == (dp && bf16_dot));
    if (!has_dot)
      CHECK(bf.find(zmm ? "@llvm.fma.v16f32" : "@llvm.fma.v8f32") != std::string::npos);
  }
}

TEST_CASE("llvm ir: a matmul runs the packed micro-kernel; its epilogue fuses") {
  auto c = plan("matmul", {{F32, {32, 64}}, {F32, {64, 48}}, {F32, {32, 48}}, {F32, {32, 48}}},
                [](const Args &a) {
                  pto::set_vec_tile_shapes(16, 48);
                  pto::set_cube_tile_shapes({16, 32}, {16, 64}, {16, 48});
                  auto m = pto::matmul(a[0], a[1], F32);
                  pto::assemble(pto::relu(pto::add(m, a[2])), {0, 0}, a[3]);
                });
  // The micro-kernel's k loop is vector FMAs; the bias and relu epilogue is
  // one fused group (one tile loop).
  check_ir("matmul", c, {kOneTileLoop, R"(
CHECK:     {{^}}mm.jr.body:
CHECK:     {{^}}uk.body{{[0-9]*}}:
CHECK:     call <{{[0-9]+}} x float> @llvm.fma.v{{[0-9]+}}f32
)"});
}
