// ops_doc.cpp - Renders docs/ops.md and docs/sharding_ops.md from the op registry, and lists
// what would make them untrue (see op_registry.h).
#include "pto/parallel.h"

#include "op_registry.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace pto::registry {

namespace {

/// Splits "a, b, c" on ", " (an empty string gives no item).
std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(", ", start);
    if (end == std::string_view::npos)
      end = s.size();
    out.emplace_back(s.substr(start, end - start));
    start = end + 2;
  }
  return out;
}

/// A table cell: `|` escaped, empty shown as an em dash.
std::string cell(std::string_view s) {
  if (s.empty())
    return "—";
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += '\\';
    out += c;
  }
  return out;
}

/// "tests/codegen/elementwise_test.cpp" -> "[elementwise](../tests/codegen/elementwise_test.cpp)".
std::string test_link(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') + 1);
  std::string_view label = base.substr(0, base.rfind('.'));
  if (label.ends_with("_test"))
    label.remove_suffix(5);
  if (path.starts_with("samples/"))
    label = base; // a sample: its file name
  return "[" + std::string(label) + "](../" + std::string(path) + ")";
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

} // namespace

double round_figure(double ulp) {
  if (!std::isfinite(ulp) || ulp < 10)
    return std::isfinite(ulp) ? std::round(ulp * 100) / 100 : ulp;
  // Divide or multiply by an exact power of ten, so the result is the double nearest the
  // decimal figure (what the literal in op_registry.cpp parses to).
  const int k = static_cast<int>(std::floor(std::log10(ulp))) - 2;
  const double p = std::pow(10.0, std::abs(k));
  return k < 0 ? std::round(ulp * p) / p : std::round(ulp / p) * p;
}

std::string figure_text(double ulp) {
  if (ulp < 0)
    return "—";
  if (std::isinf(ulp))
    return "inf";
  const double v = round_figure(ulp);
  char buf[32];
  if (v == 0)
    return "0";
  if (v < 10)
    std::snprintf(buf, sizeof buf, "%.2f", v);
  else if (v < 100)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (v < 1e6)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else {
    const int e = static_cast<int>(std::floor(std::log10(v)));
    std::snprintf(buf, sizeof buf, "%.2fe%d", v / std::pow(10.0, e), e);
  }
  return buf;
}

const char *title(Kind k) {
  switch (k) {
  case Kind::Elementwise:
    return "Elementwise arithmetic, math and conversion";
  case Kind::Activation:
    return "Activations";
  case Kind::Predicate:
    return "Compares, predicates, logical and bitwise ops, selection";
  case Kind::Reduction:
    return "Reductions and scans";
  case Kind::Shape:
    return "Views, shape and movement";
  case Kind::Creation:
    return "Creation and random numbers";
  case Kind::Matmul:
    return "Matrix multiplication";
  case Kind::Indexing:
    return "Indexing: gather, scatter, segments";
  case Kind::Sort:
    return "Sorting, selection and special functions";
  case Kind::Composite:
    return "Composite NN ops";
  case Kind::Control:
    return "Tile shapes and control flow";
  case Kind::Distributed:
    return "Distributed: shmem primitives";
  case Kind::Collective:
    return "Distributed: collectives";
  }
  return "?";
}

const OpRow *find(std::string_view fn) {
  for (const auto &r : ops())
    if (r.fn == fn)
      return &r;
  return nullptr;
}

std::string_view short_name(std::string_view fn) {
  size_t p = fn.rfind("::");
  return p == std::string_view::npos ? fn : fn.substr(p + 2);
}

std::vector<const OpRow *> rows_for(std::string_view mindspore_name) {
  std::vector<std::string> spellings;
  size_t start = 0;
  while (start <= mindspore_name.size()) {
    size_t end = mindspore_name.find('/', start);
    if (end == std::string_view::npos)
      end = mindspore_name.size();
    spellings.emplace_back(mindspore_name.substr(start, end - start));
    start = end + 1;
  }
  std::vector<const OpRow *> out;
  for (const auto &r : ops()) {
    bool hit = false;
    for (const auto &n : split_list(r.mindspore))
      for (const auto &s : spellings)
        hit = hit || n == s;
    if (hit)
      out.push_back(&r);
  }
  return out;
}

std::string render_ops_md() {
  const auto &rows = ops();
  size_t measured = 0, tested = 0;
  for (const auto &r : rows) {
    measured += r.ulp.measured() ? 1 : 0;
    tested += !r.planned && !r.tests.empty() ? 1 : 0;
  }
  std::ostringstream os;
  os << "# ptojit operations\n\n"
     << "<!-- Generated from tools/op_registry.cpp by gen_ops_doc; do not edit (README: "
        "\"Regenerating the docs\"). -->\n\n"
     << "Every user-facing operation of the DSL headers (`dsl/include/pto/`): " << rows.size()
     << " operations. " << tested
     << " of them are run by the test files named in their row (a test checks that every such "
        "file exists and calls the op); the others are marked untested. Each header documents "
        "shapes, dtypes, errors and edge values in full; this table is the index.\n\n"
     << "- **PyPTO**: the op of the PyPTO catalogue it mirrors "
        "(the PyPTO reference's §5-6, kept beside the repository as `shared/reference/pypto.md`); "
        "— "
        "when PyPTO has none.\n"
     << "- **MindSpore**: the MindSpore operators with the same semantics (the names of "
        "`reference/sharding.md`; the full mapping of that table is in "
        "[sharding_ops.md](sharding_ops.md)).\n"
     << "- **max ULP** (" << measured
     << " float ops): the largest error measured by "
        "[ulp_sweep](../tests/codegen/ulp_sweep_test.cpp), in units in the last place of the "
        "result dtype, fp32 / fp64 / fp16 / bf16, over at least 100k inputs per dtype "
        "(fp16/bf16 unary ops: all 65536) including 0, -0, subnormals, +-inf, NaN, the largest "
        "finite values and points near poles and branch cuts, against a long double (fp64: "
        "__float128) reference. NaN matches only NaN and infinities match exactly. fp16/bf16 are "
        "computed in fp32 and rounded once. inf: some finite result came out as an infinity or NaN "
        "(the row says where). — means not measured: not float math, or a composite the sweep "
        "does not cover yet.\n"
     << "- **differs**: where the semantics differ from PyPTO or PyTorch (PyTorch's where PyPTO "
        "leaves a case open).\n"
     << "- **exact**: where the JIT-compiled code and the interpreter give the same bits. They "
        "do for integer and bool results of every op; for copies (views, shape and movement "
        "ops, assemble, indexing, sort, shmem transfers and their dtype conversion), casts, "
        "compares and predicates, rounding ops, abs, neg, copysign, maximum/minimum, clip, "
        "relu/relu6, sign and where; for every float op whose max ULP is 0 or 0.50 in all four "
        "dtypes (correctly rounded, so the result is unique); for amax/amin and argmax/argmin "
        "(NaN as some NaN); for cumsum/cumprod and for reductions over an axis other than the "
        "last (both accumulate in the same order and type); for the library ops (index, sort, "
        "segment and special functions: one routine serves both); and for what the headers "
        "define exactly at empty extents and signed zeros of reductions and scans (a float sum "
        "over an empty axis is +0 and a sum of only -0 is -0, in both). Other float results "
        "agree within the bounds the headers and this table give, not bit for bit: "
        "transcendentals and composite activations (SLEEF's vector functions in the JIT, libm "
        "in the interpreter), and sums, products, means and variances over the last axis, "
        "matmul and the composites built on them (softmax, norms, losses): the JIT accumulates "
        "a vector of lanes at a time, the interpreter one element at a time.\n";
  for (int k = 0; k <= static_cast<int>(Kind::Collective); ++k) {
    const Kind kind = static_cast<Kind>(k);
    bool any = false;
    for (const auto &r : rows)
      any = any || r.kind == kind;
    if (!any)
      continue;
    os << "\n## " << title(kind) << "\n\n"
       << "| op | header | PyPTO | MindSpore | dtypes | max ULP fp32 / fp64 / fp16 / bf16 | "
          "tested in | differs |\n"
       << "|---|---|---|---|---|---|---|---|\n";
    for (const auto &r : rows) {
      if (r.kind != kind)
        continue;
      std::string ulp = "—";
      if (r.ulp.measured())
        ulp = figure_text(r.ulp.fp32) + " / " + figure_text(r.ulp.fp64) + " / " +
              figure_text(r.ulp.fp16) + " / " + figure_text(r.ulp.bf16);
      std::string tests;
      for (const auto &t : r.tests)
        tests += (tests.empty() ? "" : ", ") + test_link(t);
      if (r.planned)
        tests = "**planned: not implemented yet**";
      else if (tests.empty())
        tests = "**untested**";
      os << "| `" << r.fn << "` | `" << r.header << "` | " << cell(r.pypto) << " | "
         << cell(r.mindspore) << " | " << cell(r.dtypes) << " | " << ulp << " | " << cell(tests)
         << " | " << cell(r.notes) << " |\n";
    }
  }
  return os.str();
}

std::string render_sharding_md() {
  const std::vector<pto::parallel::RuleInfo> rules = pto::parallel::rules();
  // The rules that compute a seed-table name: those whose op is `parallel::` + the short name of
  // a ptojit row for it, or whose own MindSpore name is it.
  auto rules_of = [&](std::string_view ms) {
    std::string out;
    for (const auto &rule : rules) {
      bool match = rule.mindspore == ms;
      for (const auto *r : rows_for(ms))
        match = match || rule.op == "parallel::" + std::string(short_name(r->fn));
      if (match && out.find("`" + rule.op + "`") == std::string::npos)
        out += (out.empty() ? "" : ", ") + ("`" + rule.op + "`");
    }
    return out;
  };
  std::ostringstream os;
  os << "# MindSpore distributed operators in ptojit\n\n"
     << "<!-- Generated from tools/op_registry.cpp and pto::parallel's rule table "
        "(dsl/src/parallel/rules.cpp) by gen_ops_doc; do not edit (README: "
        "\"Regenerating the docs\"). -->\n\n"
     << "Every operator name of the sharding operator table (`shared/reference/sharding.md` beside "
        "the repository: MindSpore r1.1's operators with a sharding strategy), the ptojit op(s) "
        "that compute it on one PE, and the `pto::parallel` rule that runs it with a strategy "
        "(`pto/parallel.h`; the model, the strategies and the errors are in "
        "[sharding.md](sharding.md)). "
     << rules.size()
     << " rules exist. A name with no rule yet is run by hand: a kernel computes the local slice "
        "and calls the collectives of `pto/collectives.h` where MindSpore would insert them. The "
        "ops and their semantics are in [ops.md](ops.md).\n\n"
     << "| MindSpore | ptojit | pto::parallel rule | notes |\n|---|---|---|---|\n";
  size_t covered = 0;
  for (const auto &s : sharding_names()) {
    std::string fns;
    for (const auto *r : rows_for(s.name))
      fns += (fns.empty() ? "" : ", ") + ("`" + std::string(r->fn) + "`");
    const std::string rule = rules_of(s.name);
    covered += rule.empty() ? 0 : 1;
    os << "| " << s.name << " | " << cell(fns) << " | " << cell(rule) << " | " << cell(s.notes)
       << " |\n";
  }
  os << "\n"
     << covered << " of " << sharding_names().size()
     << " names have a rule.\n\n## The rule table\n\n"
     << "Each rule: its inputs, whether a strategy may be given (MindSpore's `shard`), the "
        "communication a split costs, and what the op does with an input that carries a pending "
        "Partial on a mesh axis no factor of the op uses (\"resolve\": an allreduce over that "
        "axis first). Exactness against one PE: movement, max and min are bitwise; a split "
        "summed factor (matmul's k, a reduced axis, the softmax axis) adds the PEs' partial "
        "results in mesh-coordinate order, a reassociation of the one-PE sum "
        "([sharding.md](sharding.md), \"Determinism and tolerance\").\n\n"
     << "| rule | MindSpore | inputs | strategy | communication of a split | pending partials | "
        "notes |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const auto &r : rules)
    os << "| `" << r.op << "` | " << r.mindspore << " | "
       << (r.arity == 0 ? std::string("1-128") : std::to_string(r.arity)) << " | "
       << (r.takes_strategy ? "yes" : "no (follows its input)") << " | " << cell(r.cost) << " | "
       << cell(r.partials) << " | " << cell(r.notes) << " |\n";
  return os.str();
}

std::vector<std::string> problems(const std::string &source_dir) {
  std::vector<std::string> out;
  std::map<std::string, std::string> headers;
  for (const auto &r : ops()) {
    const std::string fn(r.fn);
    if (r.planned) {
      out.push_back(fn + ": planned, not implemented yet; finish it or drop the row");
      continue;
    }
    const std::string path = source_dir + "/dsl/include/" + std::string(r.header);
    auto it = headers.find(path);
    if (it == headers.end())
      it = headers.emplace(path, read_file(path)).first;
    if (it->second.empty()) {
      out.push_back((fn + ": header ").append(path).append(" is missing"));
      continue;
    }
    const std::regex decl("\\b" + std::string(short_name(r.fn)) + "\\s*\\(");
    if (!std::regex_search(it->second, decl))
      out.push_back(fn + ": " + std::string(r.header) + " does not declare it");
    if (r.tests.empty())
      out.push_back(fn + ": no test file runs it");
  }
  for (const auto &s : sharding_names())
    if (rows_for(s.name).empty() && s.notes.empty())
      out.push_back("sharding.md operator " + std::string(s.name) +
                    ": no row names it and no note says why");
  return out;
}

std::string source_dir() { return PTO_SOURCE_DIR; }

} // namespace pto::registry
