// hardening_sizes_test.cpp - Sizes computed from user input never wrap (issue 8): HostTensor
// shapes, element access and guards; result shapes of the ops that compute dims (tile, pad,
// concat, reshape, one_hot, expand, broadcasting, zeros/ones/full/arange); shmem tensors against
// the symmetric heap limit; vec and cube tile bounds. Each class expects its exact pto::Error
// type with the op and this file's line; kernels run in both executors.
#include "pto/pto.h"
#include "pto/runtime/world.h"
#include "pto/size_math.h"

#include "support/expect_error.h"
#include "support/guard.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr const char *kFile = "hardening_sizes_test.cpp";
constexpr int64_t k2_62 = int64_t{1} << 62;

/// Traces and runs `fn` as a one-tensor kernel in `mode` (a [4, 8] fp32 argument by default).
template <class F>
void run1(pto::RunMode mode, F fn, pto::HostTensor x = pto::HostTensor(pto::DT_FP32, {4, 8})) {
  auto k = pto::jit("sizes", fn, support::opts(mode));
  k(x);
}

} // namespace

TEST_CASE("HostTensor: shapes whose byte size passes 2^62 are a ShapeError, never a wrapped size") {
  int line = 0;
  // 2^80 elements: the product wraps to 0 in int64.
  auto huge = [&] {
    line = __LINE__ + 1;
    pto::HostTensor t(pto::DT_FP32, {int64_t{1} << 40, int64_t{1} << 40});
  };
  support::expect_error<pto::ShapeError>(huge, kFile, line, "HostTensor", "[1099511627776, ");
  // 2^62 elements of 4 bytes: numel fits, bytes wrap to 0.
  auto bytes = [&] {
    line = __LINE__ + 1;
    pto::HostTensor t(pto::DT_FP32, {int64_t{1} << 31, int64_t{1} << 31});
  };
  support::expect_error<pto::ShapeError>(bytes, kFile, line, "HostTensor", "2^62");
  // A zero dim makes the tensor empty, but its other dims still give its strides.
  auto empty_huge = [&] {
    line = __LINE__ + 1;
    pto::HostTensor t(pto::DT_FP32, {0, k2_62});
  };
  support::expect_error<pto::ShapeError>(empty_huge, kFile, line, "HostTensor", "zero dims");
  // Exactly 2^62 bytes is the limit, allowed by the rule, refused by the allocator: RuntimeError,
  // not std::bad_alloc.
  auto no_memory = [&] {
    line = __LINE__ + 1;
    pto::HostTensor t(pto::DT_INT8, {k2_62});
  };
  if (!support::alloc_failure_aborts()) // ASan and valgrind abort on such a request
    support::expect_error<pto::RuntimeError>(no_memory, kFile, line, "HostTensor", "out of memory");
  // Sizes that fit: numel and size_bytes are the plain products.
  pto::HostTensor a(pto::DT_FP16, {2, 3, 5}), e(pto::DT_INT64, {3, 0, 5}), s(pto::DT_DOUBLE, {});
  CHECK(a.numel() == 30);
  CHECK(a.size_bytes() == 60); // 30 elements * 2 bytes
  CHECK(e.numel() == 0);
  CHECK(e.size_bytes() == 0);
  CHECK(s.numel() == 1); // rank 0: one element
  CHECK(s.size_bytes() == 8);
}

TEST_CASE("HostTensor::get/set: an index outside [0, numel) is a ShapeError naming index and "
          "range") {
  pto::HostTensor x(pto::DT_FP32, {2, 2});
  int line = 0;
  auto far = [&] {
    line = __LINE__ + 1;
    (void)x.get(1000000);
  };
  support::expect_error<pto::ShapeError>(far, kFile, line, "HostTensor::get",
                                         "index 1000000 is outside [0, 4)");
  auto negative = [&] {
    line = __LINE__ + 1;
    x.set(-1, 1.0);
  };
  support::expect_error<pto::ShapeError>(negative, kFile, line, "HostTensor::set",
                                         "index -1 is outside [0, 4)");
  auto one_past = [&] {
    line = __LINE__ + 1;
    x.set(4, 1.0);
  };
  support::expect_error<pto::ShapeError>(one_past, kFile, line, "HostTensor::set", "index 4");
  pto::HostTensor none;
  auto empty = [&] {
    line = __LINE__ + 1;
    (void)none.get(0);
  };
  support::expect_error<pto::ShapeError>(empty, kFile, line, "HostTensor::get", "[0, 0)");
  // In range: a round trip, and the neighbours untouched.
  x.set(3, 2.5);
  CHECK(x.get(3) == 2.5);
  CHECK(x.get(2) == 0);
}

TEST_CASE("HostTensor moves: the moved-from tensor is HostTensor(), never data-less with a size") {
  auto is_empty = [](const pto::HostTensor &t) {
    return t.numel() == 0 && t.shape().empty() && t.data() == nullptr && t.size_bytes() == 0 &&
           t.guard_intact();
  };
  for (auto guard :
       {pto::HostTensorGuard::None, pto::HostTensorGuard::Canary, pto::HostTensorGuard::Pages}) {
    pto::HostTensor x(pto::DT_FP32, {8, 16}, guard);
    x.set(127, 4.5);
    pto::HostTensor moved(std::move(x)); // NOLINT(performance-move-const-arg)
    CHECK(is_empty(x));                  // NOLINT(bugprone-use-after-move)
    CHECK(moved.numel() == 128);
    CHECK(moved.get(127) == 4.5);
    CHECK(moved.guard() == guard);
    int line = __LINE__ + 1;
    auto get = [&] { (void)x.get(0); }; // NOLINT(bugprone-use-after-move)
    support::expect_error<pto::ShapeError>(get, kFile, line, "HostTensor::get", "[0, 0)");
    pto::HostTensor assigned(pto::DT_INT32, {2});
    assigned = std::move(moved);
    CHECK(is_empty(moved)); // NOLINT(bugprone-use-after-move)
    CHECK(assigned.dtype() == pto::DT_FP32);
    CHECK(assigned.get(127) == 4.5);
    CHECK(assigned.guard_intact());
    line = __LINE__ + 1;
    auto set = [&] { moved.set(0, 1.0); }; // NOLINT(bugprone-use-after-move)
    support::expect_error<pto::ShapeError>(set, kFile, line, "HostTensor::set", "[0, 0)");
    pto::HostTensor copy = assigned; // copies share the data
    CHECK(copy.data() == assigned.data());
  }
}

TEST_CASE("HostTensor guards: canaries catch writes just before and after the data") {
  for (pto::DataType dt : {pto::DT_INT8, pto::DT_FP16, pto::DT_FP32, pto::DT_DOUBLE}) {
    for (int64_t n : {0, 1, 7, 64, 65}) { // empty, below, at and past one cache line of data
      CAPTURE(pto::name(dt));
      CAPTURE(n);
      auto t = support::guarded(dt, {n});
      CHECK(t.guard() == pto::HostTensorGuard::Canary);
      CHECK(t.guard_intact());
      for (int64_t i = 0; i < n; ++i) // every data byte may be written
        t.set(i, -1.0);
      CHECK(t.guard_intact());
      auto *bytes = static_cast<uint8_t *>(t.data());
      const int64_t size = t.size_bytes();
      uint8_t saved = bytes[size];
      bytes[size] ^= 0xFF; // the first byte past the end
      CHECK_FALSE(t.guard_intact());
      CHECK(t.guard_damage().find("1 canary byte after the data") != std::string::npos);
      CHECK(t.guard_damage().find("data + " + std::to_string(size)) != std::string::npos);
      bytes[size] = saved;
      CHECK(t.guard_intact());
      bytes[-1] ^= 0x01; // the last byte before the start
      CHECK(t.guard_damage().find("before the data") != std::string::npos);
      CHECK(t.guard_damage().find("data - 1") != std::string::npos);
      bytes[-1] ^= 0x01;
      CHECK(support::guard_damage({&t}).empty());
    }
  }
  // The default guard is process-wide and can be set; tensors keep the guard they were made with.
  const auto before = pto::HostTensor::default_guard();
  pto::HostTensor::set_default_guard(pto::HostTensorGuard::Canary);
  pto::HostTensor c(pto::DT_FP32, {3});
  pto::HostTensor::set_default_guard(pto::HostTensorGuard::None);
  pto::HostTensor plain(pto::DT_FP32, {3});
  pto::HostTensor::set_default_guard(before);
  CHECK(c.guard() == pto::HostTensorGuard::Canary);
  CHECK(plain.guard() == pto::HostTensorGuard::None);
  CHECK(plain.guard_intact());
}

TEST_CASE("HostTensor guards: with pages, the data ends at a page that faults when written") {
  const int64_t page = sysconf(_SC_PAGESIZE);
  for (int64_t n : {1, 5, 1024, 1025}) {
    CAPTURE(n);
    pto::HostTensor t(pto::DT_FP32, {n}, pto::HostTensorGuard::Pages);
    auto end = reinterpret_cast<uintptr_t>(t.data()) + static_cast<uintptr_t>(t.size_bytes());
    CHECK(end % static_cast<uintptr_t>(page) == 0);
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % 4 == 0); // element-aligned
    t.set(n - 1, 1.0);                                     // the last element is writable
    CHECK(t.guard_intact());
    static_cast<uint8_t *>(t.data())[-1] = 0; // the canary before it is checked
    CHECK_FALSE(t.guard_intact());
  }
  // One byte past the end faults: in a child process, so the test itself survives.
  pto::HostTensor t(pto::DT_FP32, {5}, pto::HostTensorGuard::Pages);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGSEGV, SIG_DFL); // die by the signal even under a sanitizer's handler
    static_cast<volatile uint8_t *>(t.data())[t.size_bytes()] = 1;
    _exit(0); // not reached when the page faults
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSEGV);
}

TEST_CASE("tile, pad, concat, reshape: result dims computed from arguments are checked") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto tile = [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::tile(x, {k2_62, 1}); // 4 * 2^62 rows wraps to 0
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, tile); }, kFile, line, "tile",
                                           "dim 0 of the result 4 * 4611686018427387904");
    auto pad = [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::pad(x, {0, INT64_MAX});
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, pad); }, kFile, line, "pad",
                                           "the padded last dim 8 + 9223372036854775807");
    auto concat = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      auto a = pto::full({k2_62, 1}, 0.0, pto::DT_INT8); // exactly 2^62 bytes: allowed
      line = __LINE__ + 1;
      pto::concat({a, a}, 0);
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, concat); }, kFile, line, "concat",
                                           "the concat dim");
    auto reshape = [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8, 8);
      line = __LINE__ + 1;
      pto::reshape(x, {-1, k2_62, 4}); // the known dims' product overflows
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, reshape); }, kFile, line, "reshape",
                                           "element count");
  }
}

TEST_CASE("results past 2^62 bytes are a ShapeError naming the op as written: zeros, ones, full, "
          "one_hot, expand, arange, broadcasting") {
  const int64_t k40 = int64_t{1} << 40;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto zeros = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::zeros({k40, k40}, pto::DT_FP32);
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, zeros); }, kFile, line, "zeros",
                                           "[1099511627776, 1099511627776]");
    auto ones = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::ones({int64_t{1} << 31, int64_t{1} << 31}, pto::DT_FP32); // 2^64 bytes
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, ones); }, kFile, line, "ones", "2^62");
    auto full = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::full({k2_62, 2}, 1.0, pto::DT_INT8);
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, full); }, kFile, line, "full", "2^62");
    auto one_hot = [&](pto::Tensor idx) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      pto::one_hot(idx, k2_62); // [4, 2^62] int64
    };
    support::expect_error<pto::ShapeError>(
        [&] { run1(mode, one_hot, pto::HostTensor(pto::DT_INT32, {4})); }, kFile, line, "one_hot",
        "[4, 4611686018427387904]");
    auto expand = [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8);
      auto one = pto::view(x, {1, 1}, {0, 0});
      line = __LINE__ + 1;
      pto::expand(one, {k40, k40});
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, expand); }, kFile, line, "expand",
                                           "2^62");
    auto arange = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(8);
      line = __LINE__ + 1;
      pto::arange(int64_t{0}, int64_t{INT64_MAX});
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, arange); }, kFile, line, "arange",
                                           "INT32_MAX");
    // Broadcasting [2^40, 1] against [1, 2^40]: each operand fits, the result does not.
    auto add = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      auto a = pto::full({k40, 1}, 1.0, pto::DT_FP32);
      auto b = pto::full({1, k40}, 1.0, pto::DT_FP32);
      line = __LINE__ + 1;
      pto::add(a, b);
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, add); }, kFile, line, "add", "2^62");
  }
}

TEST_CASE("create_shmem_tensor: a shape past the symmetric heap limit fails at creation") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto overflow = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      dist::create_shmem_tensor("world", 1, pto::DT_FP32, {int64_t{1} << 40, int64_t{1} << 40});
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, overflow); }, kFile, line,
                                           "create_shmem_tensor", "2^62");
    // 2^42 bytes: no overflow, but above the 2^40-byte heap; the message gives both.
    auto too_big = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      line = __LINE__ + 1;
      dist::create_shmem_tensor("world", 1, pto::DT_FP32, {int64_t{1} << 20, int64_t{1} << 20});
    };
    auto msg = support::expect_error<pto::ShapeError>([&] { run1(mode, too_big); }, kFile, line,
                                                      "create_shmem_tensor", "4398046511104 bytes");
    CHECK(msg.find("1099511627776 bytes (2^40) per PE") != std::string::npos);
    // Two tensors that fit alone but not together: the second one is reported.
    auto two = [&](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      // 2^38 + 2^38 + 2^39 data bytes, plus 512 signal bytes each: just past 2^40.
      dist::create_shmem_tensor("world", 1, pto::DT_INT8, {int64_t{1} << 20, int64_t{1} << 18});
      dist::create_shmem_tensor("world", 1, pto::DT_INT8, {int64_t{1} << 20, int64_t{1} << 18});
      line = __LINE__ + 1;
      dist::create_shmem_tensor("world", 1, pto::DT_INT8, {int64_t{1} << 20, int64_t{1} << 19});
    };
    support::expect_error<pto::ShapeError>([&] { run1(mode, two); }, kFile, line,
                                           "create_shmem_tensor",
                                           "symmetric heap of group 'world'");
  }
}

TEST_CASE("tile shapes are bounded: vec entries by 2^62, cube blocks by the scratch budget") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto vec = [&](pto::Tensor) {
      line = __LINE__ + 1;
      pto::set_vec_tile_shapes(4, INT64_MAX);
    };
    support::expect_error<pto::TileShapeError>([&] { run1(mode, vec); }, kFile, line,
                                               "set_vec_tile_shapes", "tile dim 1 is");
    const int64_t k40 = int64_t{1} << 40;
    auto cube = [&](pto::Tensor) {
      line = __LINE__ + 1;
      pto::set_cube_tile_shapes({16, k40}, {16, 16}, {16, 16});
    };
    support::expect_error<pto::TileShapeError>([&] { run1(mode, cube); }, kFile, line,
                                               "set_cube_tile_shapes", "268435456 bytes");
    // Each block fits alone; the three together pass the budget:
    // (8192 * 8192 + 8192 * 16 + 8192 * 16) * 4 bytes > 2^28.
    auto cube_sum = [&](pto::Tensor) {
      line = __LINE__ + 1;
      pto::set_cube_tile_shapes({16, 8192}, {16, 8192}, {16, 16});
    };
    support::expect_error<pto::TileShapeError>([&] { run1(mode, cube_sum); }, kFile, line,
                                               "set_cube_tile_shapes", "scratch");
  }
}

TEST_CASE("a matmul with a large cube tile inside the budget runs and matches a naive loop") {
  // mL1 = 96, kL1 = 512, nL1 = 512: (96 * 512 + 512 * 512 + 96 * 512) * 4 = 1.4 MB.
  const int64_t m = 13, k = 37, n = 21; // tails in every dim
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto kern = pto::jit(
        "mm_big_tile",
        [](pto::Tensor a, pto::Tensor b, pto::Tensor c) {
          pto::set_cube_tile_shapes({16, 96}, {16, 512}, {16, 512});
          pto::set_vec_tile_shapes(8, 16);
          pto::assemble(pto::matmul(a, b, pto::DT_FP32), {0, 0}, c);
        },
        support::opts(mode));
    auto a = support::guarded(pto::DT_FP32, {m, k}), b = support::guarded(pto::DT_FP32, {k, n});
    auto c = support::guarded(pto::DT_FP32, {m, n});
    for (int64_t i = 0; i < a.numel(); ++i)
      a.set(i, static_cast<double>(i % 7) - 3); // small integers: every sum is exact in fp32
    for (int64_t i = 0; i < b.numel(); ++i)
      b.set(i, static_cast<double>(i % 5) - 2);
    support::run_guarded(kern, a, b, c);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < k; ++q)
          want += a.get(i * k + q) * b.get(q * n + j);
        CHECK(c.get(i * n + j) == want);
      }
  }
}

TEST_CASE("strided_slice: a stride past the dim picks one element and never overflows") {
  const int64_t rows = 4, cols = 8;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "slice_huge_stride",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::strided_slice(x, {0, 3}, {4, 8}, {1, INT64_MAX}), {0, 0}, y);
        },
        support::opts(mode));
    auto x = support::guarded(pto::DT_FP32, {rows, cols}),
         y = support::guarded(pto::DT_FP32, {rows, 1});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, static_cast<double>(i));
    support::run_guarded(k, x, y);
    for (int64_t r = 0; r < rows; ++r)
      CHECK(y.get(r) == static_cast<double>(r * cols + 3)); // column 3 of row r
  }
}

TEST_CASE("collectives: per-peer counts whose sums overflow are a ShapeError, not a wrapped "
          "count") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    // PE 0 sends 2^62 rows to each of 2 PEs: the sum 2^63 wraps negative and would pass the
    // "sends at most x's rows" check.
    auto k = pto::jit(
        "a2a_counts",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          line = __LINE__ + 1;
          auto r = dist::all_to_all(x, {{k2_62, k2_62}, {1, 1}});
          pto::assemble(pto::view(r, {4, 8}, {0, 0}), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < 2; ++p) {
      xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
    }
    pto::runtime::World world(2);
    support::expect_error<pto::ShapeError>(
        [&] { world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }); }, kFile, line,
        "all_to_all", "rows sent");
  }
}
