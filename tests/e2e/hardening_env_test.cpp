// hardening_env_test.cpp - The PTO_* environment variables (issue 8): one strict parser
// (pto/env.h) for all of them. Table-driven: for every variable of the library's table, values of
// each class that must be refused (empty list items, unknown names, signs, fractions, hex, spaces,
// trailing text, out of range, past int64) are an ArgumentError naming the variable, the value and
// what is accepted, at the kernel call and at World construction, whatever the transport reads
// (PTO_MPI_* on the threads transport); accepted values pass. And the program-size cap
// (pto::kMaxKernelOps, PTO_MAX_OPS).
#include "pto/env.h"
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/env_var.h"
#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using support::EnvVar;

namespace {

constexpr const char *kFile = "hardening_env_test.cpp";

/// Values every variable of `v`'s kind must refuse.
std::vector<std::string> refused_values(const pto::env::Var &v) {
  using pto::env::Kind;
  switch (v.kind) {
  case Kind::Choice:
    return {"bogus",           v.values[0] + " ", " " + v.values[0],
            v.values[0] + "x", v.values[0] + ",", "ALL"};
  case Kind::List:
    return {"all,,", ",ir", "ir,", "ir,,plan", "bogus", "ir,bogus", " ir", "ir ", "IR"};
  case Kind::Integer:
    return {"-1",
            "+5",
            "abc",
            "12ms",
            "1.5",
            "0x10",
            " 5",
            "5 ",
            "99999999999999999999",
            std::to_string(v.hi) + "0",
            std::to_string(v.hi + 1),
            v.lo > 0 ? std::to_string(v.lo - 1) : "-0"};
  case Kind::Text:
    break;
  }
  return {};
}

/// An accepted value of `v` (not one that changes what this process does for the other tests:
/// PTO_ISA is fixed once per process, so its accepted value is left out).
std::optional<std::string> accepted_value(const pto::env::Var &v) {
  using pto::env::Kind;
  if (std::string(v.name) == "PTO_ISA" || std::string(v.name) == "PTO_RUN_MODE")
    return std::nullopt;
  switch (v.kind) {
  case Kind::Choice:
    return v.values.back();
  case Kind::List:
    return v.values.front() + "," + v.values.back();
  case Kind::Integer:
    return std::to_string(v.hi);
  case Kind::Text:
    break;
  }
  return std::nullopt;
}

auto add_one(const char *name, pto::RunMode m) {
  return pto::jit(
      name,
      [](pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(4, 8);
        pto::assemble(x + 1.0, {0, 0}, y);
      },
      support::opts(m));
}

} // namespace

TEST_CASE("hardening env: every PTO_* variable refuses bad values by one rule, at every entry") {
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  for (const pto::env::Var &v : pto::env::variables()) {
    CAPTURE(std::string(v.name));
    for (const std::string &bad : refused_values(v)) {
      CAPTURE(bad);
      EnvVar set(v.name, bad.c_str());
      // The parser itself.
      int line = __LINE__ + 1;
      auto check = [] { pto::env::check_all(std::source_location::current()); };
      std::string msg =
          support::expect_error<pto::ArgumentError>(check, kFile, line, v.name, "'" + bad + "' ");
      CHECK(msg.find("; expected ") != std::string::npos);
      // A kernel call, in both executors (the interpreter reads no PTO_ISA or PTO_DUMP llvm
      // stage: it checks them all the same). The call's own World is made first.
      for (auto m : support::run_modes()) {
        CAPTURE(std::string(support::mode_name(m)));
        auto k = add_one("env_table", m);
        line = __LINE__ + 1;
        auto call = [&] { k(x, y); };
        support::expect_error<pto::ArgumentError>(call, kFile, line, v.name, "'" + bad + "' ");
      }
      // A World on the threads transport: the MPI transport's variables too.
      line = __LINE__ + 1;
      auto make = [] { pto::runtime::World w(2); };
      support::expect_error<pto::ArgumentError>(make, kFile, line, v.name, "'" + bad + "' ");
    }
    if (auto ok = accepted_value(v)) {
      CAPTURE(*ok);
      EnvVar set(v.name, ok->c_str());
      CHECK_NOTHROW(pto::env::check_all(std::source_location::current()));
      CHECK_NOTHROW(pto::runtime::World(2));
    }
    EnvVar empty(v.name, ""); // empty is unset
    CHECK_NOTHROW(pto::env::check_all(std::source_location::current()));
  }
}

TEST_CASE("hardening env: the messages name the variable, the value and what is accepted") {
  {
    EnvVar dump("PTO_DUMP", "all,,");
    const int line = __LINE__ + 1;
    auto check = [] { pto::env::check_all(std::source_location::current()); };
    std::string msg = support::thrown<pto::ArgumentError>(check);
    CHECK(msg == std::string(kFile) + ":" + std::to_string(line) +
                     ": PTO_DUMP: 'all,,' has an empty item; expected a comma-separated list of: "
                     "sharding, ir, tiles, plan, llvm, asm, or all");
  }
  {
    EnvVar shared("PTO_MPI_SHARED", "2");
    const int line = __LINE__ + 1;
    auto make = [] { pto::runtime::World w(2); };
    std::string msg = support::thrown<pto::ArgumentError>(make);
    CHECK(msg == std::string(kFile) + ":" + std::to_string(line) +
                     ": PTO_MPI_SHARED: '2' is not a known value (creating a World); expected "
                     "one of: 0, 1");
  }
  {
    // A kernel called outside World::run on a fresh thread (whose implicit 1-PE World is made
    // at this call): the message names the kernel, not the implicit World.
    auto k = pto::jit("env_outside_world", [](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8);
      pto::assemble(pto::add(x, 1.0), {0, 0}, x);
    });
    EnvVar timeout("PTO_DEADLOCK_TIMEOUT_MS", "-1");
    std::string msg;
    std::thread t([&] {
      pto::HostTensor x(pto::DT_FP32, {4, 8});
      msg = support::thrown<pto::ArgumentError>([&] { k(x); });
    });
    t.join();
    CHECK(msg.find("PTO_DEADLOCK_TIMEOUT_MS: '-1' is not a decimal integer (tracing kernel "
                   "'env_outside_world')") != std::string::npos);
  }
  {
    EnvVar mb("PTO_JIT_CACHE_MB", "1099511627776"); // 2^40
    auto check = [] { pto::env::check_all(std::source_location::current()); };
    std::string msg = support::thrown<pto::ArgumentError>(check);
    CHECK(msg.find("PTO_JIT_CACHE_MB: '1099511627776' is out of range; expected a decimal integer "
                   "in [0, 1099511627775]") != std::string::npos);
  }
  // The test suites' own variables use the same parser.
  {
    EnvVar cases("PTO_FUZZ_CASES", "10k");
    CHECK_THROWS_WITH_AS(support::env_u64("PTO_FUZZ_CASES", 1),
                         doctest::Contains("PTO_FUZZ_CASES: '10k' is not a decimal integer"),
                         pto::ArgumentError);
  }
}

TEST_CASE("hardening env: a misspelt PTO_* name is reported with the nearest known one") {
  auto has = [](const std::vector<std::string> &v, const std::string &s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  {
    EnvVar typo("PTO_RUN_MOD", "interpret"), far("PTO_ZZZZZZZZZZZZ", "1");
    EnvVar suite("PTO_FUZZ_WHATEVER", "1"), known("PTO_ISA", "avx2");
    const std::vector<std::string> u = pto::env::unknown_names();
    CHECK(has(u, "PTO_RUN_MOD (did you mean PTO_RUN_MODE?)"));
    CHECK(has(u, "PTO_ZZZZZZZZZZZZ")); // nothing near: no suggestion
    for (const auto &name : u) {
      CHECK(name.rfind("PTO_FUZZ_", 0) != 0); // the suites' own prefixes
      CHECK(name.rfind("PTO_ISA", 0) != 0);
    }
    CHECK_NOTHROW(pto::env::check_all(std::source_location::current())); // a warning only
  }
  CHECK(!has(pto::env::unknown_names(), "PTO_RUN_MOD (did you mean PTO_RUN_MODE?)"));
}

TEST_CASE("hardening env: a kernel tracing more than the op limit is a CompileError") {
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  int bad_line = 0; // the assemble's: op n + 1 of a chain of n adds
  auto chain = [&](int n) {
    return [&bad_line, n](pto::Tensor a, pto::Tensor b) {
      pto::set_vec_tile_shapes(4, 8);
      pto::Tensor t = a;
      for (int i = 0; i < n; ++i)
        t = t + 1.0;
      bad_line = __LINE__ + 1;
      pto::assemble(t, {0, 0}, b);
    };
  };
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    {
      EnvVar limit("PTO_MAX_OPS", "100");
      // 99 adds + assemble = 100 ops: at the limit.
      auto ok = pto::jit("ops_at_limit", chain(99), support::opts(m));
      ok(x, y);
      CHECK(y.get(0) == 99.0f);
      auto k = pto::jit("ops_over_limit", chain(100), support::opts(m));
      auto call = [&] { k(x, y); };
      support::expect_error<pto::CompileError>(
          call, kFile, bad_line, "assemble",
          "kernel 'ops_over_limit' traces more than 100 ops (the limit, from PTO_MAX_OPS); this "
          "is op 101.");
    }
    // The default limit: tracing stops at op kMaxKernelOps + 1 (before any compile).
    auto k = pto::jit("ops_default_limit", chain(static_cast<int>(pto::kMaxKernelOps)),
                      support::opts(m));
    auto call = [&] { k(x, y); };
    support::expect_error<pto::CompileError>(
        call, kFile, bad_line, "assemble",
        "kernel 'ops_default_limit' traces more than " + std::to_string(pto::kMaxKernelOps) +
            " ops (the limit); this is op " + std::to_string(pto::kMaxKernelOps + 1) + ".");
  }
}
