// fusion_plan_test.cpp - The fusion planner (passes/fuse.h) as a unit: which ops form a group,
// how many row passes it takes, what each member's value becomes, and the plan's independence
// from where the program lives. Expectations follow the model in fuse.h, worked by hand.
#include "pto/pto.h"

#include "passes/planned.h"

#include <doctest/doctest.h>

#include <vector>

using passes_test::plan;
using pto::codegen::FusedGroup;
using pto::codegen::FusionPlan;
using pto::codegen::kNoOp;
using pto::codegen::member_pass;
using pto::codegen::OpId;
using pto::codegen::PlannedProgram;
using pto::codegen::RegionId;
using pto::codegen::RegionItem;

namespace {

constexpr pto::DataType F32 = pto::DT_FP32;

/// The kind names of group `g`'s members, in order.
std::vector<std::string> member_kinds(const PlannedProgram &pp, const FusedGroup &g) {
  std::vector<std::string> k;
  for (OpId id : g.ops)
    k.push_back(pto::ir::op_info(pp.sites.op(id).kind).name);
  return k;
}

/// The pass of each member of `g`, in order.
std::vector<int> member_passes(const PlannedProgram &pp, const FusedGroup &g) {
  std::vector<int> passes;
  for (OpId id : g.ops)
    passes.push_back(member_pass(g, pp.sites.op(id)));
  return passes;
}

const std::vector<RegionItem> &kernel_items(const PlannedProgram &pp) {
  return pp.plan.items(RegionId{});
}

} // namespace

TEST_CASE(
    "fusion plan: softmax is one group of 3 row passes (amax | sub exp sum | 1/s mul store)") {
  auto c =
      plan("softmax", {{F32, {64, 256}}, {F32, {64, 256}}}, [](const std::vector<pto::Tensor> &a) {
        pto::set_vec_tile_shapes(16, 256);
        pto::assemble(pto::softmax(a[0], -1), {0, 0}, a[1]);
      });
  const PlannedProgram &pp = *c.planned;
  REQUIRE(pp.plan.groups.size() == 1);
  CHECK(kernel_items(pp) == std::vector<RegionItem>{{kNoOp, 0}});
  const FusedGroup &g = pp.plan.groups[0];
  CHECK(member_kinds(pp, g) ==
        std::vector<std::string>{"amax", "sub", "exp", "sum", "reciprocal", "mul", "assemble"});
  CHECK(g.passes == 3);
  CHECK(g.has_reduce);
  // m = amax(x) accumulates in pass 0; x - m, e = exp(.) and sum(e) in pass 1; r = 1 / s (once
  // per row), e * r and the store in pass 2.
  CHECK(member_passes(pp, g) == std::vector<int>{0, 1, 1, 1, 2, 2, 2});
  const auto &ops = g.ops;
  const auto value_of = [&](size_t member) { return pp.sites.op(ops[member]).outputs[0]; };
  CHECK(g.values.at(value_of(0)).uniform);    // m: one value per row
  CHECK(g.values.at(value_of(0)).level == 1); // ready from pass 1
  CHECK(g.values.at(value_of(3)).uniform);    // s
  CHECK(g.values.at(value_of(3)).level == 2);
  CHECK(g.values.at(value_of(4)).uniform);  // 1 / s: one value per row, not per element
  CHECK(g.values.at(value_of(2)).scratch);  // e: made in pass 1, read by the mul in pass 2
  CHECK(!g.values.at(value_of(1)).scratch); // x - m: read in its own pass only
  for (auto &[v, fv] : g.values)
    CHECK(!fv.store); // nothing outside the group reads a value
  CHECK(pp.plan.materialized.empty());
  CHECK(g.tile == std::vector<int64_t>{16, 256});
}

TEST_CASE("fusion plan: reading storage an assemble of the group writes splits the group") {
  // exp(x) is assembled into y; add(y, 1) must see every row of y written, so it starts a new
  // group. The same kernel reading x instead of y is a single group: the split is the hazard.
  auto kernel = [](bool hazard) {
    return [hazard](const std::vector<pto::Tensor> &a) {
      pto::set_vec_tile_shapes(8, 64);
      pto::assemble(pto::exp(a[0]), {0, 0}, a[1]);
      pto::assemble(pto::add(hazard ? a[1] : a[0], 1.0), {0, 0}, a[2]);
    };
  };
  const std::vector<passes_test::Param> params{{F32, {8, 64}}, {F32, {8, 64}}, {F32, {8, 64}}};
  auto split = plan("hazard", params, kernel(true));
  const PlannedProgram &pp = *split.planned;
  REQUIRE(pp.plan.groups.size() == 2);
  CHECK(pp.plan.groups[0].ops == std::vector<OpId>{0, 1});
  CHECK(pp.plan.groups[1].ops == std::vector<OpId>{2, 3});
  CHECK(kernel_items(pp) == std::vector<RegionItem>{{kNoOp, 0}, {kNoOp, 1}});

  auto fused = plan("no_hazard", params, kernel(false));
  REQUIRE(fused.planned->plan.groups.size() == 1);
  CHECK(fused.planned->plan.groups[0].ops == std::vector<OpId>{0, 1, 2, 3});
  CHECK(fused.planned->plan.groups[0].passes == 1);
}

TEST_CASE("fusion plan: an in-place update of one window stays fused; an overlapping one splits") {
  // y[0:8] = exp(y[0:8]) reads and writes the same window in one pass: row by row, each row is
  // loaded before it is stored, so it fuses. Writing the window one row lower overlaps rows
  // other rows still read: a new group.
  auto kernel = [](int64_t row) {
    return [row](const std::vector<pto::Tensor> &a) {
      pto::set_vec_tile_shapes(8, 64);
      auto top = pto::view(a[0], {8, 64}, {0, 0});
      pto::assemble(pto::exp(top), {row, 0}, a[0]);
    };
  };
  auto same = plan("in_place", {{F32, {16, 64}}}, kernel(0));
  CHECK(same.planned->plan.groups.size() == 1);
  auto shifted = plan("shifted", {{F32, {16, 64}}}, kernel(1));
  CHECK(shifted.planned->plan.groups.size() == 2);
}

TEST_CASE("fusion plan: a reduction over a non-last axis is lowered on its own, with storage") {
  auto c = plan("colsum", {{F32, {16, 32}}, {F32, {1, 32}}}, [](const std::vector<pto::Tensor> &a) {
    pto::set_vec_tile_shapes(16, 32);
    pto::assemble(pto::sum(a[0], 0, {.keepdim = true}), {0, 0}, a[1]);
  });
  const PlannedProgram &pp = *c.planned;
  // op 0 (sum over axis 0) stands alone; op 1 (the assemble) is a group of one.
  CHECK(kernel_items(pp) == std::vector<RegionItem>{{0, -1}, {kNoOp, 0}});
  REQUIRE(pp.plan.groups.size() == 1);
  CHECK(pp.plan.groups[0].ops == std::vector<OpId>{1});
  const auto sum_out = pp.sites.op(0).outputs[0];
  CHECK(pp.plan.materialized == std::set<pto::ir::ValueId>{sum_out});
  // Over the last axis the reduction is fused: a group yielding one value per row. Its assemble
  // walks a one-column space, not the group's [16, 32], so it is a group of its own (fits() in
  // fuse.cpp: an assemble must span the group's columns) reading the stored row values.
  auto row =
      plan("rowsum", {{F32, {16, 32}}, {F32, {16, 1}}}, [](const std::vector<pto::Tensor> &a) {
        pto::set_vec_tile_shapes(16, 32);
        pto::assemble(pto::sum(a[0], 1, {.keepdim = true}), {0, 0}, a[1]);
      });
  const PlannedProgram &rp = *row.planned;
  CHECK(kernel_items(rp) == std::vector<RegionItem>{{kNoOp, 0}, {kNoOp, 1}});
  REQUIRE(rp.plan.groups.size() == 2);
  CHECK(rp.plan.groups[0].ops == std::vector<OpId>{0});
  const auto row_sum = rp.sites.op(0).outputs[0];
  CHECK(rp.plan.groups[0].values.at(row_sum).uniform);
  CHECK(rp.plan.groups[0].values.at(row_sum).store);
}

TEST_CASE("fusion plan: a value read after its group is stored; different tiles do not fuse") {
  auto c = plan("two_tiles", {{F32, {16, 64}}, {F32, {16, 64}}, {F32, {16, 64}}},
                [](const std::vector<pto::Tensor> &a) {
                  pto::set_vec_tile_shapes(16, 64);
                  auto e = pto::exp(a[0]);        // op 0
                  pto::assemble(e, {0, 0}, a[1]); // op 1
                  pto::set_vec_tile_shapes(8, 64);
                  pto::assemble(pto::neg(e), {0, 0}, a[2]); // ops 2, 3: another tile
                });
  const PlannedProgram &pp = *c.planned;
  REQUIRE(pp.plan.groups.size() == 2);
  CHECK(pp.plan.groups[0].ops == std::vector<OpId>{0, 1});
  CHECK(pp.plan.groups[1].ops == std::vector<OpId>{2, 3});
  const auto e = pp.sites.op(0).outputs[0];
  CHECK(pp.plan.groups[0].values.at(e).store); // the second group reads it from storage
  CHECK(pp.plan.materialized.count(e) == 1);
}

TEST_CASE("fusion plan: loop bodies are regions of their own, named by their loop op") {
  auto c = plan("rows", {{F32, {4, 32}}, {F32, {4, 32}}}, [](const std::vector<pto::Tensor> &a) {
    pto::set_vec_tile_shapes(1, 32);
    for (auto i : pto::loop(4))
      pto::assemble(pto::exp(pto::view(a[0], {1, 32}, {i, 0})), {i, 0}, a[1]);
  });
  const PlannedProgram &pp = *c.planned;
  CHECK(kernel_items(pp) == std::vector<RegionItem>{{0, -1}}); // op 0: the loop
  const auto &body = pp.plan.items(RegionId{0, 0});
  REQUIRE(body.size() == 1);
  REQUIRE(body[0].group == 0);
  CHECK(pp.plan.groups[0].ops == std::vector<OpId>{1, 2});
  CHECK(pp.sites.region_of(pp.sites.op(0).body) == RegionId{0, 0});
}

TEST_CASE("fusion plan: ids, not addresses: a copy of the program reads the same plan") {
  auto c =
      plan("softmax", {{F32, {32, 128}}, {F32, {32, 128}}}, [](const std::vector<pto::Tensor> &a) {
        pto::set_vec_tile_shapes(8, 128);
        auto m = pto::amax(a[0], -1, {.keepdim = true});
        pto::assemble(pto::exp(a[0] - m), {0, 0}, a[1]);
      });
  const PlannedProgram &pp = *c.planned;
  const pto::ir::Program copy = pp.program; // every op at another address
  const pto::codegen::SiteTable sites(copy);
  CHECK(sites.names() == pp.sites.names());
  // The original plan, read against the copy, says the same thing...
  CHECK(print_plan(copy, sites, pp.plan) == print_plan(pp.program, pp.sites, pp.plan));
  // ...and planning the copy gives the same plan.
  const FusionPlan again = plan_fusion(copy, sites, expand_tiles(copy, sites));
  CHECK(again.regions == pp.plan.regions);
  REQUIRE(again.groups.size() == pp.plan.groups.size());
  CHECK(again.groups[0].ops == pp.plan.groups[0].ops);
  CHECK(again.groups[0].producers == pp.plan.groups[0].producers);
}
