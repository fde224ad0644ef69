// host_isa_test.cpp - PTO_ISA (passes/isa.h, llvm/host_isa.h): each level's LLVM CPU and
// features on made-up hosts (an AVX-512 one, an AVX2-only one like some AMD EPYC machines, an
// SSE4 one), the refusal of unknown values and of levels a host lacks, the errors at the kernel
// call (that every SLEEF name of every level resolves in the JIT: abi_test.cpp). The code paths of
// each level run in CI's isa-avx2 stage (scripts/test.sh: PTO_ISA=avx2) and by hand with
// PTO_ISA=sse4 or sse2.
#include "pto/pto.h"

#include "llvm/host_isa.h"
#include "support/env_var.h"
#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using pto::codegen::Isa;
using pto::codegen::IsaRefusal;
using pto::codegen::JitTarget;

namespace {

/// A host with `on` present and `off` absent (LLVM feature names).
std::map<std::string, bool> host(const std::vector<std::string> &on,
                                 const std::vector<std::string> &off) {
  std::map<std::string, bool> m;
  for (auto &f : on)
    m[f] = true;
  for (auto &f : off)
    m[f] = false;
  return m;
}

const std::vector<std::string> kSse2{"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2"};
const std::vector<std::string> kSse4{"cx16", "sahf", "popcnt", "sse3", "ssse3", "sse4.1", "sse4.2"};
const std::vector<std::string> kAvx2{"avx", "avx2",  "bmi",   "bmi2", "f16c",
                                     "fma", "lzcnt", "movbe", "xsave"};
const std::vector<std::string> kAvx512{"avx512f",  "avx512bw", "avx512cd",
                                       "avx512dq", "avx512vl", "evex512"};
/// Features outside every level (crypto, AVX-512 extensions, AMX).
const std::vector<std::string> kOther{"aes", "sha", "avx512fp16", "amx-tile", "avx512vnni"};

std::vector<std::string> cat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (auto &p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

const auto kAvx512Host = host(cat({kSse2, kSse4, kAvx2, kAvx512, kOther}), {});
const auto kAvx2Host = host(cat({kSse2, kSse4, kAvx2, {"aes", "sha"}}),
                            cat({kAvx512, {"avx512fp16", "amx-tile", "avx512vnni"}}));
const auto kSse4Host = host(cat({kSse2, kSse4}), cat({kAvx2, kAvx512, kOther}));

/// The features of `features` ("+a,-b,...") as name -> on.
std::map<std::string, bool> parse(const std::string &features) {
  std::map<std::string, bool> m;
  std::stringstream ss(features);
  std::string f;
  while (std::getline(ss, f, ','))
    m[f.substr(1)] = f[0] == '+';
  return m;
}

JitTarget target(const std::string &request, const std::map<std::string, bool> &h) {
  auto r = pto::codegen::resolve_jit_target(request, "znver2", h);
  REQUIRE_MESSAGE(std::holds_alternative<JitTarget>(r), request);
  return std::get<JitTarget>(r);
}

IsaRefusal refusal(const std::string &request, const std::map<std::string, bool> &h) {
  auto r = pto::codegen::resolve_jit_target(request, "znver2", h);
  REQUIRE_MESSAGE(std::holds_alternative<IsaRefusal>(r), request);
  return std::get<IsaRefusal>(r);
}

/// `x + 1` into y: a kernel that traces, so that its call reads PTO_ISA.
auto add_one(const std::string &name, pto::RunMode m) {
  return pto::jit(
      name,
      [](pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(4, 8);
        pto::assemble(x + 1.0, {0, 0}, y);
      },
      support::opts(m));
}

} // namespace

TEST_CASE("host ISA: each level keeps the host's features of that level and turns off the rest") {
  struct Case {
    const char *request;
    Isa isa;
    const char *cpu;
    std::vector<std::string> on;
  };
  const std::vector<Case> cases{
      {"avx512", Isa::Avx512, "x86-64-v4", cat({kSse2, kSse4, kAvx2, kAvx512})},
      {"avx2", Isa::Avx2, "x86-64-v3", cat({kSse2, kSse4, kAvx2})},
      {"sse4", Isa::Sse4, "x86-64-v2", cat({kSse2, kSse4})},
      {"sse2", Isa::Sse2, "x86-64", kSse2},
  };
  for (const Case &c : cases) {
    CAPTURE(std::string(c.request));
    JitTarget t = target(c.request, kAvx512Host);
    CHECK(t.request == c.request);
    CHECK(t.isa == c.isa);
    CHECK(t.cpu == c.cpu);
    // Every host feature is named once, on exactly when it belongs to the level.
    auto got = parse(t.features);
    CHECK(got.size() == kAvx512Host.size());
    const std::set<std::string> on(c.on.begin(), c.on.end());
    for (const auto &[f, present] : kAvx512Host) {
      CAPTURE(f);
      REQUIRE(got.count(f) == 1);
      CHECK(got[f] == (on.count(f) == 1));
    }
  }
  // A level never turns on what the host lacks.
  auto avx2 = parse(target("avx2", kAvx2Host).features);
  CHECK(avx2["avx2"]);
  CHECK_FALSE(avx2["avx512f"]);
  CHECK_FALSE(avx2["sha"]);
}

TEST_CASE("host ISA: native is the host's own CPU and features at its highest level") {
  for (const char *request : {"", "native"}) {
    CAPTURE(std::string(request));
    JitTarget t = target(request, kAvx2Host);
    CHECK(t.request == "native");
    CHECK(t.cpu == "znver2");
    CHECK(parse(t.features) == kAvx2Host);
    CHECK(t.isa == Isa::Avx2);
  }
  CHECK(target("native", kAvx512Host).isa == Isa::Avx512);
  CHECK(target("native", kSse4Host).isa == Isa::Sse4);
  CHECK(target("native", host(kSse2, {})).isa == Isa::Sse2);
  // AVX-512F alone (no BW/DQ/VL) is not the avx512 level: SLEEF's avx2 variant is called.
  CHECK(target("native", host(cat({kSse2, kSse4, kAvx2, {"avx512f"}}), {})).isa == Isa::Avx2);
}

TEST_CASE("host ISA: an unknown value or a level the host lacks is refused, listing the rest") {
  const std::vector<std::string> all{"native", "avx512", "avx2", "sse4", "sse2"};
  CHECK(pto::codegen::isa_names() == all);
  for (const char *bad : {"avx3", "AVX2", "avx-512", " avx2", "native,avx2"}) {
    CAPTURE(std::string(bad));
    IsaRefusal r = refusal(bad, kAvx512Host);
    CHECK(r.problem == "unknown value '" + std::string(bad) + "'");
    CHECK(r.accepted == all);
  }
  IsaRefusal r = refusal("avx512", kAvx2Host);
  CHECK(r.problem == "'avx512' needs CPU features this host lacks (avx512f, avx512bw, avx512cd, "
                     "avx512dq, avx512vl)");
  CHECK(r.accepted == std::vector<std::string>{"native", "avx2", "sse4", "sse2"});
  r = refusal("avx2", kSse4Host);
  CHECK(r.problem == "'avx2' needs CPU features this host lacks (avx, avx2, fma)");
  CHECK(r.accepted == std::vector<std::string>{"native", "sse4", "sse2"});
}

TEST_CASE("host ISA: a bad or changed PTO_ISA is an ArgumentError at the kernel call") {
  // The process's target is fixed now (if no kernel fixed it yet); every later value must match.
  const std::string fixed = pto::codegen::jit_target().request;
  const std::string other = fixed == "sse2" ? "native" : "sse2"; // sse2: every x86-64 host
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  for (auto m : support::run_modes()) { // the interpreter reports a typo too
    CAPTURE(std::string(support::mode_name(m)));
    {
      support::EnvVar isa("PTO_ISA", "avx3");
      auto k = add_one("isa_env", m);
      const int line = __LINE__ + 1;
      auto call = [&] { k(x, y); };
      support::expect_error<pto::ArgumentError>(
          call, "host_isa_test.cpp", line, "PTO_ISA",
          "'avx3' is not a known value (tracing kernel 'isa_env'); expected one of: native, ");
    }
    {
      support::EnvVar isa("PTO_ISA", other.c_str());
      auto k = add_one("isa_env_changed", m);
      const int line = __LINE__ + 1;
      auto call = [&] { k(x, y); };
      support::expect_error<pto::ArgumentError>(
          call, "host_isa_test.cpp", line, "PTO_ISA",
          std::string("'")
              .append(other)
              .append("' differs from '")
              .append(fixed)
              .append(
                  "', which this process's JIT was set up with (tracing kernel 'isa_env_changed'); "
                  "PTO_ISA is read once per process"));
    }
    // The value it was fixed with (or none, when that is native) runs.
    support::EnvVar isa("PTO_ISA", fixed == "native" ? nullptr : fixed.c_str());
    auto k = add_one("isa_env_ok", m);
    k(x, y);
    for (int64_t i = 0; i < 32; ++i)
      CHECK(y.get(i) == 1.0); // x is zero-filled
  }
}
