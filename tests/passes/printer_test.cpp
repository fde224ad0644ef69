// printer_test.cpp - The IR printer (pto/ir/printer.h): the text every dump, cache key and
// golden file is made of. Expected texts follow printer.h's format, written out by hand.
#include "pto/ir/printer.h"
#include "pto/pto.h"

#include "passes/planned.h"

#include <doctest/doctest.h>

using passes_test::plan;

namespace {
constexpr pto::DataType F32 = pto::DT_FP32;

void small_kernel(const std::vector<pto::Tensor> &a) {
  pto::set_vec_tile_shapes(2, 8);
  auto s = pto::sum(pto::mul(a[0], 2.0), 1, {.keepdim = true});
  for (auto i : pto::loop(4))
    pto::assemble(pto::sub(1.0, pto::view(s, {1, 1}, {i, 0})), {i, 0}, a[1]);
}
} // namespace

TEST_CASE("printer: values, then ops with their attributes, loops indented") {
  auto c = plan("small", {{F32, {4, 8}}, {F32, {4, 1}}}, small_kernel);
  CHECK(c.planned->printed == "kernel small\n"
                              "  %arg0: param fp32 [4, 8]\n"
                              "  %arg1: param fp32 [4, 1]\n"
                              "  %t2: local fp32 [4, 8]\n"
                              "  %t3: local fp32 [4, 1]\n"
                              // a view's valid extent: min(max(valid - offset, 0), size)
                              "  %t4: view fp32 [1, 1] valid [min(max((4 - i0), 0), 1), 1] of "
                              "%t3 @[i0, 0]\n"
                              "  %t5: local fp32 [1, 1] valid [min(max((4 - i0), 0), 1), 1]\n"
                              "  %t6: view fp32 [1, 1] valid [min(max((4 - i0), 0), 1), 1] of "
                              "%arg1 @[i0, 0]\n"
                              "  %t2 = mul(%arg0, scalar 2) {tile=[2, 8]}\n"
                              "  %t3 = sum(%t2) {axis=1, keepdim=true, tile=[2, 8]}\n"
                              "  loop i0 = 0 to 4 step 1 {\n"
                              "    %t5 = sub(%t4, scalar 1 first) {tile=[2, 8]}\n"
                              "    %t6 = assemble(%t5) {tile=[2, 8]}\n"
                              "  }\n");
}

TEST_CASE("printer: an op's head names outputs, kind, inputs and a scalar, without attributes") {
  auto c = plan("small", {{F32, {4, 8}}, {F32, {4, 1}}}, small_kernel);
  const auto &pp = *c.planned;
  CHECK(pto::ir::print_op_head(pp.program, pp.sites.op(0)) == "%t2 = mul(%arg0, scalar 2)");
  CHECK(pto::ir::print_op_head(pp.program, pp.sites.op(1)) == "%t3 = sum(%t2)");
  CHECK(pto::ir::print_op_head(pp.program, pp.sites.op(3)) == "%t5 = sub(%t4, scalar 1 first)");
}

TEST_CASE("printer: the structural hash is the printed text's, blind to source lines") {
  auto a = plan("k", {{F32, {4, 8}}, {F32, {4, 1}}}, small_kernel);
  auto b = plan("k", {{F32, {4, 8}}, {F32, {4, 1}}}, [](const std::vector<pto::Tensor> &x) {
    pto::set_vec_tile_shapes(2, 8); // small_kernel again, from other lines
    auto s = pto::sum(pto::mul(x[0], 2.0), 1, {.keepdim = true});
    for (auto i : pto::loop(4))
      pto::assemble(pto::sub(1.0, pto::view(s, {1, 1}, {i, 0})), {i, 0}, x[1]);
  });
  auto other = plan("k", {{F32, {4, 16}}, {F32, {4, 1}}}, small_kernel);
  const auto &p = a.planned->program;
  CHECK(pto::ir::structural_hash(p) == pto::ir::text_hash(pto::ir::print(p)));
  CHECK(a.planned->hash == pto::ir::structural_hash(p));
  CHECK(a.planned->printed == b.planned->printed);
  CHECK(a.planned->hash == b.planned->hash);
  CHECK(a.planned->sites.names() != b.planned->sites.names()); // the lines differ
  CHECK(a.planned->hash != other.planned->hash);
}
