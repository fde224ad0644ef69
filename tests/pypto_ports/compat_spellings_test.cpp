// compat_spellings_test.cpp - The PyPTO spellings issue 13 asked for, each in both executors:
// compiler hints (pass_options, idx_name, parallel), static dims as integers (view shapes, tile
// sizes, scalar operands), non-number kernel constants keying the cache (DataType, tuple, a
// config struct), local tensors (pto::tensor) and the dtype message listing the supported ones.
// Expected values are plain C++ loops over the inputs.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>

namespace {

void fill(pto::HostTensor &t, double scale) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, scale * double(i % 13) - 3.0);
}

/// A config struct as PyPTO programs pass to a kernel; keyed by its fields.
struct Config {
  int tile_rows = 2;
  double alpha = 1.0;
};
std::string pto_trace_key(const Config &c) {
  return std::to_string(c.tile_rows) + "," + std::to_string(c.alpha);
}

} // namespace

TEST_CASE("hints: pass_options, set_pass_options, idx_name, parallel are accepted") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto opts = support::opts(mode);
    opts.pass_options = {{"vec_nbuffer_setting", int64_t{2}}, {"cube_l1_reuse_mode", "auto"}};
    auto k = pto::jit(
        "hints",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_pass_options({{"sg_set_scope", int64_t{1}}});
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(0, 4, 1, {.name = "rows", .idx_name = "i", .parallel = true})) {
            auto t = pto::view(x, {1, 8}, {i, 0});
            pto::assemble(t * 2.0, {i, 0}, y);
          }
        },
        opts);
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    fill(x, 0.5);
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i)
      REQUIRE(y.get(i) == 2.0 * x.get(i));
  }
  int line = __LINE__ + 1;
  auto bad = [] { pto::set_pass_options({{"", int64_t{1}}}); };
  support::expect_error<pto::ArgumentError>(bad, "compat_spellings_test.cpp", line,
                                            "set_pass_options", "empty");
}

TEST_CASE("static dims: x.shape(i) as view shape, tile size and scalar operand") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "static_dims",
        [](pto::Tensor x, pto::Tensor y) {
          const auto rows = x.shape(0), cols = x.shape(1);
          pto::set_vec_tile_shapes(rows, cols);
          auto whole = pto::view(x, {rows, cols}, {0, 0});
          pto::assemble(whole * cols + rows, {0, 0}, y); // y = x * cols + rows
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {3, 5}), y(pto::DT_FP32, {3, 5});
    fill(x, 1.0);
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i)
      REQUIRE(y.get(i) == x.get(i) * 5.0 + 3.0);
  }
}

TEST_CASE("static dims: a run-time entry is an error naming the op") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    std::string which;
    auto k = pto::jit(
        "runtime_dims",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 4);
          if (which == "view") {
            line = __LINE__ + 1;
            pto::assemble(pto::view(x, {x.shape(0), 4}, {0, 0}), {0, 0}, y);
          } else if (which == "tile") {
            line = __LINE__ + 1;
            pto::set_vec_tile_shapes(x.shape(0), 4);
          } else {
            line = __LINE__ + 1;
            pto::assemble(x * x.shape(0), {0, 0}, y);
          }
        },
        support::opts(mode, {{.dims = {pto::DYNAMIC, 4}}}));
    pto::HostTensor x(pto::DT_FP32, {4, 4}), y(pto::DT_FP32, {4, 4});
    which = "view";
    support::expect_error<pto::ShapeError>([&] { k(x, y); }, "compat_spellings_test.cpp", line,
                                           "view", "shape entry 0 is not static");
    which = "tile";
    support::expect_error<pto::TileShapeError>([&] { k(x, y); }, "compat_spellings_test.cpp", line,
                                               "set_vec_tile_shapes", "not static");
    which = "operand";
    support::expect_error<pto::ArgumentError>([&] { k(x, y); }, "compat_spellings_test.cpp", line,
                                              "scalar operand", "run-time SymbolicScalar");
  }
}

TEST_CASE("kernel constants: DataType, tuple and a config struct key the compile cache") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "constants",
        [](pto::Tensor x, pto::Tensor y, pto::DataType acc, std::tuple<int, double> shift,
           Config cfg) {
          pto::set_vec_tile_shapes(cfg.tile_rows, 8);
          auto t = pto::cast(x, acc) * cfg.alpha + std::get<1>(shift) * std::get<0>(shift);
          pto::assemble(pto::cast(t, pto::DT_FP32), {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    fill(x, 0.25);
    auto check = [&](double alpha, double add) {
      for (int64_t i = 0; i < x.numel(); ++i)
        REQUIRE(y.get(i) == x.get(i) * alpha + add);
    };
    k(x, y, pto::DT_FP32, std::tuple<int, double>{2, 1.5}, Config{2, 2.0});
    check(2.0, 3.0);
    k(x, y, pto::DT_FP32, std::tuple<int, double>{2, 1.5}, Config{2, 2.0});
    CHECK(k.stats().traces == 1); // equal keys: one trace
    k(x, y, pto::DT_DOUBLE, std::tuple<int, double>{2, 1.5}, Config{2, 2.0});
    k(x, y, pto::DT_FP32, std::tuple<int, double>{3, 1.5}, Config{2, 2.0});
    check(2.0, 4.5);
    k(x, y, pto::DT_FP32, std::tuple<int, double>{3, 1.5}, Config{4, -1.0});
    check(-1.0, 4.5);
    CHECK(k.stats().traces == 4); // each changed constant traces again
  }
}

TEST_CASE("local tensors: pto::tensor is an assemble target and starts as zeros") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "local_tensor",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 8);
          auto acc = pto::tensor({4, 8}, pto::DT_FP32, "acc");
          // Only rows 0 and 1 are written; rows 2 and 3 keep the zeros.
          pto::assemble(pto::view(x, {2, 8}, {0, 0}) + 1.0, {0, 0}, acc);
          pto::assemble(acc * 3.0, {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    fill(x, 1.0);
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i)
      REQUIRE(y.get(i) == (i < 16 ? (x.get(i) + 1.0) * 3.0 : 0.0));
  }
}

TEST_CASE("dtypes: an unsupported PyPTO enum member's error lists the supported ones") {
  int line = __LINE__ + 1;
  auto make = [] { pto::HostTensor t(pto::DT_UINT16, {4}); };
  const auto msg = support::expect_error<pto::DTypeError>(make, "compat_spellings_test.cpp", line,
                                                          "HostTensor", "DT_UINT16");
  CHECK(msg.find("supported: DT_INT8,") != std::string::npos);
  CHECK(msg.find("DT_BOOL") != std::string::npos);
}

TEST_CASE("matmul: out[:] = matmul(a, b) with only a cube tile set (PyPTO's default vec tile)") {
  // 150 x 40 @ 40 x 136: the default [128, 128] vec tile leaves a tail in both dims.
  const int64_t m = 150, k = 40, n = 136;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto mm = pto::jit(
        "cube_only",
        [](pto::Tensor a, pto::Tensor b, pto::Tensor c) {
          pto::set_cube_tile_shapes({32, 64}, {32, 64}, {32, 64});
          pto::assemble(pto::matmul(a, b, pto::DT_FP32), {0, 0}, c);
          const auto tile = pto::get_vec_tile_shapes();
          REQUIRE(tile ==
                  std::vector<int64_t>{pto::kMatmulDefaultVecTile, pto::kMatmulDefaultVecTile});
        },
        support::opts(mode));
    pto::HostTensor a(pto::DT_FP32, {m, k}), b(pto::DT_FP32, {k, n}), c(pto::DT_FP32, {m, n});
    fill(a, 0.25);
    fill(b, 0.5);
    mm(a, b, c);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0; // small integers times 1/8: every partial sum is exact in fp32
        for (int64_t q = 0; q < k; ++q)
          want += a.get(i * k + q) * b.get(q * n + j);
        REQUIRE(c.get(i * n + j) == want);
      }
  }
  // A rank-3 matmul does not set one (PyPTO: 3-D and 4-D need a vec tile).
  int line = __LINE__ + 5;
  auto bad = [] {
    auto mm = pto::jit("cube_only_3d", [](pto::Tensor a, pto::Tensor b, pto::Tensor c) {
      pto::set_cube_tile_shapes({32, 64}, {32, 64}, {32, 64});
      auto p = pto::matmul(a, b, pto::DT_FP32);
      pto::assemble(p, {0, 0, 0}, c);
    });
    pto::HostTensor a(pto::DT_FP32, {2, 8, 32}), b(pto::DT_FP32, {2, 32, 16}),
        c(pto::DT_FP32, {2, 8, 16});
    mm(a, b, c);
  };
  support::expect_error<pto::TileShapeError>(bad, "compat_spellings_test.cpp", line, "assemble",
                                             "no vec tile shape is set");
}

TEST_CASE("element store: set_tensor_data writes one element, concrete or symbolic index") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "set_tensor_data",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 8);
          pto::assemble(x, {0, 0}, y);
          pto::set_tensor_data(y, {1, 2}, 7.5);
          pto::set_tensor_data(y, {-1, -1}, -2.0); // from the end, as PyPTO
          for (auto i : pto::loop(0, 4, 1))
            pto::set_tensor_data(y, {i, i + 3}, 100.0); // written after the store above
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    fill(x, 1.0);
    k(x, y);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 8; ++c) {
        double want = x.get(r * 8 + c);
        if (r == 1 && c == 2)
          want = 7.5;
        if (r == 3 && c == 7)
          want = -2.0;
        if (c == r + 3)
          want = 100.0;
        REQUIRE(y.get(r * 8 + c) == want);
      }
  }
  // An int32 tensor, the value truncated toward zero as full's rule.
  auto ki =
      pto::jit("set_tensor_data_i32", [](pto::Tensor x) { pto::set_tensor_data(x, {2}, -3.9); });
  pto::HostTensor xi(pto::DT_INT32, {4});
  ki(xi);
  for (int64_t i = 0; i < 4; ++i)
    REQUIRE(xi.get(i) == (i == 2 ? -3.0 : 0.0));
  // Errors name set_tensor_data and the user's line.
  int line = __LINE__ + 2;
  auto out_of_range = [] {
    auto k = pto::jit("std_oob", [](pto::Tensor x) { pto::set_tensor_data(x, {0, 8}, 1.0); });
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    k(x);
  };
  support::expect_error<pto::ShapeError>(out_of_range, "compat_spellings_test.cpp", line,
                                         "set_tensor_data", "index 8 is out of range [0, 8)");
  line = __LINE__ + 2;
  auto too_big = [] {
    auto k = pto::jit("std_range", [](pto::Tensor x) { pto::set_tensor_data(x, {0}, 300.0); });
    pto::HostTensor x(pto::DT_INT8, {4});
    k(x);
  };
  support::expect_error<pto::DTypeError>(too_big, "compat_spellings_test.cpp", line,
                                         "set_tensor_data", "300");
  line = __LINE__ + 4;
  auto runtime_oob = [] { // i = 1 stores to column 8: a run-time ShapeError of the call
    auto k = pto::jit("std_dyn", [](pto::Tensor x) {
      for (auto i : pto::loop(0, 2, 1))
        pto::set_tensor_data(x, {pto::SymbolicScalar(0), i + 7}, 1.0);
    });
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    k(x);
  };
  support::expect_error<pto::ShapeError>(runtime_oob, "compat_spellings_test.cpp", line,
                                         "set_tensor_data", "");
}

TEST_CASE("precision_type: both PrecisionType values give the op's own result") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "precision",
        [](pto::Tensor x, pto::Tensor y, pto::Tensor z, pto::PrecisionType p) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::div(x, 3.0, p), {0, 0}, y);
          pto::assemble(pto::sqrt(x, p), {0, 0}, z);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8}), z(pto::DT_FP32, {4, 8});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, 0.75 * double(i) + 0.1);
    for (auto p : {pto::PrecisionType::INTRINSIC, pto::PrecisionType::HIGH_PRECISION}) {
      k(x, y, z, p);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const auto xi = static_cast<float>(x.get(i));
        REQUIRE(y.get(i) == static_cast<double>(xi / 3.0F)); // IEEE division, correctly rounded
        REQUIRE(z.get(i) == static_cast<double>(std::sqrt(xi)));
      }
    }
  }
  auto k = pto::jit("bad_precision", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::assemble(pto::exp(x, static_cast<pto::PrecisionType>(7)), {0, 0}, y);
  });
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  int line = __LINE__ - 3;
  support::expect_error<pto::ArgumentError>([&] { k(x, y); }, "compat_spellings_test.cpp", line,
                                            "exp", "got 7");
}

TEST_CASE("reshape inplace: same values; a view is rejected as in PyPTO") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "reshape_inplace",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 4);
          pto::assemble(pto::reshape(x * 2.0, {8, 4}, {.inplace = true}), {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {8, 4});
    fill(x, 1.0);
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i) // row-major order is kept: element i moves to i
      REQUIRE(y.get(i) == 2.0 * x.get(i));
  }
  auto k = pto::jit("reshape_view_inplace", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(8, 4);
    auto v = pto::view(x, {4, 8}, {0, 0});
    pto::assemble(pto::reshape(v, {8, 4}, {.inplace = true}), {0, 0}, y);
  });
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {8, 4});
  int line = __LINE__ - 3;
  support::expect_error<pto::ShapeError>([&] { k(x, y); }, "compat_spellings_test.cpp", line,
                                         "reshape", "a view");
}
