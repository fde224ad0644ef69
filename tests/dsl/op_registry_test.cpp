// op_registry_test.cpp - The op registry (tools/op_registry.h) tells the truth: the generated docs
// are current, every op it lists is declared in the header it names, every test file it names
// exists and calls the op, every op kind of the IR has a row, and its sharding table is exactly
// the operator list of ../shared/reference/sharding.md, each name mapped to an op or explained.
// (Its ULP figures are checked by tests/codegen/ulp_sweep_test.cpp.)
#include "pto/ir/program.h"

#include "op_registry.h"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace reg = pto::registry;

namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// "" when equal, else the first line that differs (1-based) with both versions.
std::string first_difference(const std::string &have, const std::string &want) {
  std::istringstream a(have), b(want);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb)
      return "";
    if (!ga || !gb || la != lb)
      return "line " + std::to_string(line) + ":\n  file:      " + (ga ? la : "<end>") +
             "\n  generated: " + (gb ? lb : "<end>");
  }
}

constexpr const char *kRegenerate =
    " is stale: regenerate it with `cmake --build build --target gen_ops_doc && "
    "build/tools/gen_ops_doc` (README: Regenerating the docs) and commit the result";

/// True when `text` calls or names the op: `pto::NAME`, `distributed::NAME`, `dist::NAME` or
/// `experimental::NAME` (not `std::NAME`), or `.NAME(` for a Tensor member.
bool mentions(const std::string &text, std::string_view fn) {
  const std::string name(reg::short_name(fn));
  const std::string pattern = fn.find("Tensor::") != std::string_view::npos
                                  ? "\\." + name + "\\s*\\("
                                  : "\\b(pto|distributed|dist|experimental)::" + name + "\\b";
  return std::regex_search(text, std::regex(pattern));
}

/// The operator names of sharding.md's table: the first cell of each row, split at ", ".
std::vector<std::string> sharding_md_names(const std::string &md) {
  std::vector<std::string> out;
  std::istringstream in(md);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("| ") || line.starts_with("| operator") || line.starts_with("|---"))
      continue;
    const std::string first = line.substr(2, line.find(" |", 2) - 2);
    size_t start = 0;
    while (start < first.size()) {
      size_t end = first.find(", ", start);
      if (end == std::string::npos)
        end = first.size();
      out.push_back(first.substr(start, end - start));
      start = end + 2;
    }
  }
  return out;
}

} // namespace

TEST_CASE("op registry: docs/ops.md and docs/sharding_ops.md are what gen_ops_doc writes") {
  for (const auto &[file, text] : {std::pair{"docs/ops.md", reg::render_ops_md()},
                                   std::pair{"docs/sharding_ops.md", reg::render_sharding_md()}}) {
    CAPTURE(file);
    const std::string have = read_file(reg::source_dir() + "/" + file);
    CHECK_MESSAGE(have == text,
                  file << kRegenerate << "; first difference at " << first_difference(have, text));
  }
}

TEST_CASE("op registry: every op is declared where its row says, and its test files call it") {
  const std::string ci_script = read_file(reg::source_dir() + "/scripts/test.sh");
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<std::string> untested;
  for (const auto &row : reg::ops()) {
    const std::string fn(row.fn);
    CAPTURE(fn);
    CHECK_MESSAGE(seen.emplace(fn, std::string(row.header)).second, "duplicate row");
    const std::string header =
        read_file(reg::source_dir() + "/dsl/include/" + std::string(row.header));
    REQUIRE_MESSAGE(!header.empty(), "header " << row.header << " not found");
    const bool declared =
        std::regex_search(header, std::regex("\\b" + std::string(reg::short_name(fn)) + "\\s*\\("));
    if (row.planned) {
      // The flag must stay true: once the op exists, its row must be completed.
      CHECK_MESSAGE(!declared, row.header << " now declares it: complete the row, drop `planned`");
      continue;
    }
    CHECK_MESSAGE(declared, row.header << " does not declare it");
    if (row.tests.empty())
      untested.push_back(fn);
    for (const auto &t : row.tests) {
      CAPTURE(t);
      const bool in_tests = t.starts_with("tests/") || t.starts_with("samples/");
      CHECK_MESSAGE(in_tests, "a test file is under tests/ or a sample CI runs with --check");
      const std::string text = read_file(reg::source_dir() + "/" + std::string(t));
      CHECK_MESSAGE(!text.empty(), "no such file");
      if (t.starts_with("samples/")) {
        const std::string sample(t.substr(8, t.rfind('.') - 8));
        CHECK_MESSAGE(ci_script.find("build/samples/" + sample + " ") != std::string::npos,
                      "scripts/test.sh does not run this sample (so it checks nothing in CI)");
      }
      CHECK_MESSAGE(mentions(text, fn), t << " never calls " << fn);
    }
    if (row.ulp.measured())
      CHECK_MESSAGE(std::find(row.tests.begin(), row.tests.end(),
                              "tests/codegen/ulp_sweep_test.cpp") != row.tests.end(),
                    "a row with ULP figures names the sweep that measures them");
  }
  // Every implemented op names the test files that call it: an op added without a test fails
  // here (and is shown as untested in docs/ops.md; gen_ops_doc exits 1 on it too).
  std::string list;
  for (const auto &fn : untested)
    list += " " + fn;
  CHECK_MESSAGE(untested.empty(), untested.size() << " ops have no test file:" << list);
  CHECK(reg::ops().size() >= 150); // issue 3: "docs/ops.md lists at least 150 operations"
}

TEST_CASE("op registry: every op kind of the IR has a row") {
  // Kinds whose user-facing functions are spelled differently from the IR name.
  const std::vector<std::pair<std::string, std::string>> spelled = {
      {"unsorted_segment", "pto::unsorted_segment_sum"}, // one kind, four functions
      {"paths", "pto::cond"},                            // the paths op of a cond
      {"check", "pto::view"}, // run-time shape rules of view, assemble, full, reshape, ...
  };
  for (int k = 0; k <= static_cast<int>(pto::ir::OpKind::Loop); ++k) {
    const std::string name = pto::ir::op_info(static_cast<pto::ir::OpKind>(k)).name;
    CAPTURE(name);
    bool found = false;
    for (const auto &row : reg::ops())
      found = found || reg::short_name(row.fn) == name;
    for (const auto &[ir_name, fn] : spelled)
      found = found || (ir_name == name && reg::find(fn) != nullptr);
    CHECK_MESSAGE(found, "no registry row for the op kind '"
                             << name << "': add one to tools/op_registry.cpp");
  }
}

TEST_CASE("op registry: an elementwise op's dtypes are those its facts row accepts") {
  // The dtype rule has one home, op_kinds.def; the registry's text for it is checked here.
  using pto::ir::Accepts;
  auto text = [](Accepts a) -> std::string {
    switch (a) {
    case Accepts::Arith:
      return "int8-int64, uint8, fp16, bf16, fp32, fp64";
    case Accepts::Signed:
      return "int8-int64, fp16, bf16, fp32, fp64";
    case Accepts::Float:
      return "fp16, bf16, fp32, fp64";
    case Accepts::Any:
      return "every dtype, bool too";
    case Accepts::IntBool:
      return "int8-int64, uint8, bool";
    case Accepts::Int:
      return "int8-int64, uint8";
    case Accepts::Own:
      break;
    }
    return "?";
  };
  int checked = 0;
  for (const auto &info : pto::ir::kOpInfo) {
    if (info.accepts == Accepts::Own)
      continue;
    const std::string fn = std::string("pto::") + info.name;
    CAPTURE(fn);
    const auto *row = reg::find(fn);
    REQUIRE_MESSAGE(row != nullptr, "no registry row (tools/op_registry.cpp)");
    CHECK(std::string(row->dtypes) == text(info.accepts));
    ++checked;
  }
  CHECK(checked >= 70);
}

TEST_CASE("op registry: the sharding table is sharding.md's, each name mapped or explained") {
  // The reference lives beside the repository in the team's workspace, not in a bare clone
  // (CI): compare against it when it is there; the mapping itself is checked either way.
  const std::string md = read_file(reg::source_dir() + "/../shared/reference/sharding.md");
  if (md.empty()) {
    MESSAGE("../shared/reference/sharding.md not found beside the repository: the list of "
            "names is not compared with it");
  } else {
    const auto parsed = sharding_md_names(md);
    std::vector<std::string> ours;
    for (const auto &s : reg::sharding_names())
      ours.emplace_back(s.name);
    CHECK(std::set<std::string>(parsed.begin(), parsed.end()) ==
          std::set<std::string>(ours.begin(), ours.end()));
    CHECK(parsed.size() == ours.size());
  }
  CHECK(reg::sharding_names().size() > 0);
  for (const auto &s : reg::sharding_names()) {
    CAPTURE(s.name);
    const auto rows = reg::rows_for(s.name);
    CHECK_MESSAGE((!rows.empty() || !s.notes.empty()), "no op implements it and no note says why");
    for (const auto *r : rows)
      CHECK_MESSAGE(!r->planned, r->fn << " implements it but is not implemented yet");
  }
}
