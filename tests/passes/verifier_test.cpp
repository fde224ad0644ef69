// verifier_test.cpp - The IR verifier (pto/ir/verifier.h) checks each rule its header names: a
// traced program passes, and the same program with one invariant broken by hand fails with an
// InternalError naming the op and the rule.
#include "pto/ir/verifier.h"
#include "pto/pto.h"

#include "passes/planned.h"
#include "support/expect_error.h"

#include <doctest/doctest.h>

#include <functional>

using pto::ir::OpKind;
using pto::ir::Program;

namespace {
constexpr pto::DataType F32 = pto::DT_FP32;

/// y = where(x > 0, exp(x) + 1, cast(...)) over [8, 16], with a row sum, a view and a loop:
/// op 0 exp, 1 add, 2 gt, 3 where, 4 sum (keepdim), 5 cast, 6 assemble, 7 loop {8 neg, 9 assemble}.
Program traced() {
  pto::detail::TraceInput in;
  in.name = "verify_me";
  in.dtypes = {F32, F32, F32};
  in.dims = {{8, 16}, {8, 16}, {8, 1}};
  return pto::detail::trace_program(in,
                                    [](const std::vector<pto::Tensor> &a) {
                                      pto::set_vec_tile_shapes(8, 16);
                                      auto e = pto::add(pto::exp(a[0]), 1.0);
                                      auto w = pto::where(pto::gt(a[0], 0.0), e, a[0]);
                                      auto s = pto::sum(w, 1, {.keepdim = true});
                                      pto::assemble(pto::cast(s, F32), {0, 0}, a[2]);
                                      for (auto i : pto::loop(8))
                                        pto::assemble(pto::neg(pto::view(a[0], {1, 16}, {i, 0})),
                                                      {i, 0}, a[1]);
                                    })
      .program;
}

pto::ir::Op &op_of(Program &p, OpKind k) {
  std::function<pto::ir::Op *(std::vector<pto::ir::Op> &)> find = [&](auto &ops) {
    for (auto &op : ops) {
      if (op.kind == k)
        return &op;
      if (auto *in = find(op.body))
        return in;
    }
    return static_cast<pto::ir::Op *>(nullptr);
  };
  auto *op = find(p.body);
  REQUIRE(op);
  return *op;
}

/// The InternalError verify throws for `p`, as text ("" when it passes).
std::string verify_error(const Program &p) {
  try {
    pto::ir::verify(p);
  } catch (const pto::InternalError &e) {
    return e.what();
  }
  return "";
}

/// Checks that `p` fails verification for op `op` with a message containing `what`.
void expect_broken(const Program &p, const std::string &op, const std::string &what) {
  const std::string msg = verify_error(p);
  CAPTURE(msg);
  CHECK(msg.find(": " + op + ": IR verification failed: " + what) != std::string::npos);
  CHECK(msg.find("(a ptojit bug; rerun with PTO_DUMP=ir)") != std::string::npos);
}
} // namespace

TEST_CASE("verifier: a traced program passes") { CHECK(verify_error(traced()) == ""); }

TEST_CASE("verifier: dtype rules of elementwise ops, reductions and assembles") {
  SUBCASE("binary operands of different dtypes") {
    Program p = traced();
    p.value(op_of(p, OpKind::Add).outputs[0]).dtype = pto::DT_FP16; // add's result
    expect_broken(p, "add", "result dtype DT_FP16 for operands of dtype DT_FP32");
  }
  SUBCASE("a cast whose result is not its target") {
    Program p = traced();
    op_of(p, OpKind::Cast).to = pto::DT_INT32;
    expect_broken(p, "cast", "result dtype DT_FP32, but the cast's target is DT_INT32");
  }
  SUBCASE("a select condition that is not DT_BOOL") {
    Program p = traced();
    op_of(p, OpKind::Where).inputs[0] = op_of(p, OpKind::Exp).outputs[0]; // an fp32 [8, 16]
    expect_broken(p, "where", "the condition of a select is DT_FP32, not DT_BOOL");
  }
  SUBCASE("operands of two dtypes") {
    Program p = traced();
    auto &add = op_of(p, OpKind::Add);
    add.scalar.reset();
    add.inputs.push_back(op_of(p, OpKind::Gt).outputs[0]); // fp32 + bool
    expect_broken(p, "add", "operands of dtypes DT_FP32 and DT_BOOL");
  }
  SUBCASE("a reduction changing the dtype") {
    Program p = traced();
    p.value(op_of(p, OpKind::Sum).outputs[0]).dtype = pto::DT_DOUBLE;
    expect_broken(p, "sum",
                  "result dtype " + pto::name(pto::DT_DOUBLE) + " for an input of dtype DT_FP32");
  }
  SUBCASE("an assemble into a view of another dtype") {
    Program p = traced();
    auto &view = p.value(op_of(p, OpKind::Assemble).outputs[0]); // into %arg2
    view.dtype = pto::DT_FP16;
    p.value(view.base).dtype = pto::DT_FP16;
    expect_broken(p, "assemble", "assemble of DT_FP32 [8, 1] into a view of DT_FP16 [8, 1]");
  }
}

TEST_CASE("verifier: rank and shape rules") {
  SUBCASE("an operand that does not broadcast to the result") {
    Program p = traced();
    p.value(op_of(p, OpKind::Exp).outputs[0]).shape = {8, 8};
    expect_broken(p, "exp",
                  "operand %arg0 of shape [8, 16] does not broadcast to the result "
                  "shape [8, 8]");
  }
  SUBCASE("a result of another rank than its widest operand") {
    Program p = traced();
    auto &v = p.value(op_of(p, OpKind::Exp).outputs[0]);
    v.shape = {1, 8, 16};
    v.valid = v.shape;
    expect_broken(p, "exp", "result rank 3, expected 2");
  }
  SUBCASE("a reduction result that is not the input with its axis kept as 1") {
    Program p = traced();
    op_of(p, OpKind::Sum).keepdim = false;
    expect_broken(p, "sum", "result shape [8, 1], expected [8] (input [8, 16] over axis 1)");
  }
  SUBCASE("a reduction axis out of range") {
    Program p = traced();
    op_of(p, OpKind::Sum).axis = 2;
    expect_broken(p, "sum", "reduction axis out of range");
  }
  SUBCASE("a vec tile shorter than the space it tiles, or with an entry <= 0") {
    Program p = traced();
    op_of(p, OpKind::Exp).tile.vec = {8};
    expect_broken(p, "exp", "a vec tile of 1 entries for a space of rank 2");
    op_of(p, OpKind::Exp).tile.vec = {8, 0};
    expect_broken(p, "exp", "vec tile entry 1 is 0");
  }
  SUBCASE("arity") {
    Program p = traced();
    op_of(p, OpKind::Exp).inputs.push_back(op_of(p, OpKind::Exp).inputs[0]);
    expect_broken(p, "exp", "expected 1 inputs and 1 outputs, got 2 and 1");
  }
}

TEST_CASE("verifier: value rules") {
  SUBCASE("a view of another dtype than its base") {
    Program p = traced();
    auto &view = p.value(op_of(p, OpKind::Neg).inputs[0]);
    view.dtype = pto::DT_INT32;
    const std::string msg = verify_error(p);
    CHECK(msg == "<ir>: verify: IR verification failed: value %" + view.name +
                     " of dtype DT_INT32 views %arg0 of dtype DT_FP32 (a ptojit bug; rerun with "
                     "PTO_DUMP=ir)");
  }
  SUBCASE("a view of another rank than its base") {
    Program p = traced();
    auto &view = p.value(op_of(p, OpKind::Neg).inputs[0]);
    view.shape.push_back(1);
    view.valid.push_back(1);
    view.offsets.push_back(0);
    CHECK(verify_error(p).find("of rank 3 has 3 offsets into %arg0 of rank 2") !=
          std::string::npos);
  }
  SUBCASE("a valid shape of another rank") {
    Program p = traced();
    p.value(op_of(p, OpKind::Exp).outputs[0]).valid.pop_back();
    CHECK(verify_error(p).find("has a valid shape of another rank") != std::string::npos);
  }
  SUBCASE("a parameter not at its index") {
    Program p = traced();
    std::swap(p.params[0], p.params[1]);
    CHECK(verify_error(p).find("value %arg0 is parameter 0 but not in the parameter list") !=
          std::string::npos);
  }
}

TEST_CASE("verifier: region rules") {
  SUBCASE("a loop body's value used after the loop") {
    Program p = traced();
    auto &loop = op_of(p, OpKind::Loop);
    const auto inner = loop.body.back().inputs[0]; // neg's result, made in the loop body
    op_of(p, OpKind::Cast).inputs[0] = inner;      // read at kernel level
    p.value(op_of(p, OpKind::Cast).outputs[0]).shape = p.value(inner).shape;
    p.value(op_of(p, OpKind::Cast).outputs[0]).valid = p.value(inner).valid;
    const std::string msg = verify_error(p);
    CAPTURE(msg);
    CHECK(msg.find("cast: IR verification failed: value %" + p.value(inner).name +
                   " of trace region 1 is used outside that region") != std::string::npos);
  }
  SUBCASE("a loop with paths") {
    Program p = traced();
    op_of(p, OpKind::Loop).paths.emplace_back();
    expect_broken(p, "loop", "a loop has paths or no loop id");
  }
}
