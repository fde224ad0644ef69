// op_registry.h - The op registry: one row per user-facing operation of the DSL headers
// (dsl/include/pto/*.h) with its PyPTO and MindSpore names, dtypes, the test files that run it,
// its measured accuracy, and where its semantics differ from PyPTO / PyTorch. docs/ops.md and
// docs/sharding_ops.md are generated from it (gen_ops_doc); tests keep it honest:
// tests/dsl/op_registry_test.cpp (the docs are current, every test file named exists and calls
// the op, every op kind of the IR has a row, the sharding table matches
// ../shared/reference/sharding.md) and tests/codegen/ulp_sweep_test.cpp (the ULP figures are
// the measured ones).
//
// It lives in tools/, not in the library: it is a record about the project (test paths, the
// figures measured on this SLEEF build), and only the doc generator and the tests read it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pto::registry {

/// The doc section an op is listed in.
enum class Kind {
  Elementwise, ///< arithmetic, math, rounding, conversion (ops.h)
  Activation,  ///< activations (ops.h)
  Predicate,   ///< compares, classification, logical and bitwise ops, where (ops.h)
  Reduction,   ///< reductions and scans (ops.h, reduce_ops.h)
  Shape,       ///< views, shape and movement ops (ops.h, shape_ops.h)
  Creation,    ///< full, zeros, ones, arange, random numbers
  Matmul,      ///< matmul.h
  Indexing,    ///< gather / scatter family (index_ops.h)
  Sort,        ///< sort, top-k, unique, special functions (sort_ops.h)
  Composite,   ///< composite NN ops (nn_ops.h)
  Control,     ///< tile shapes and traced loops
  Distributed, ///< shmem primitives (distributed.h)
  Collective,  ///< collectives written with them (collectives.h)
};
/// "Elementwise math", ... (the doc's section titles).
const char *title(Kind k);

/// Max error in ULP of the output dtype measured by tests/codegen/ulp_sweep_test.cpp, per
/// dtype; negative: not measured (not a float math op, or the dtype is not supported).
struct Ulp {
  double fp32 = -1, fp64 = -1, fp16 = -1, bf16 = -1;
  bool measured() const { return fp32 >= 0 || fp64 >= 0 || fp16 >= 0 || bf16 >= 0; }
};

/// A measured ULP error at the registry's precision: 2 decimals below 10, 3 significant digits
/// above (24.3, 183, 2.10e6); infinity stays infinity.
double round_figure(double ulp);
/// How docs/ops.md prints a figure: "0.96", "0", "24.3", "183", "2.10e6", "inf"; "—" if negative.
std::string figure_text(double ulp);

struct OpRow {
  std::string_view fn;     ///< as users call it: "pto::exp", "pto::distributed::allreduce"
  std::string_view header; ///< where it is declared: "pto/ops.h"
  Kind kind;
  std::string_view pypto;     ///< PyPTO's spelling ("" when PyPTO has no such op)
  std::string_view mindspore; ///< MindSpore operator names, ", "-separated ("" when none)
  std::string_view dtypes;    ///< the dtypes it takes, as its header documents them
  /// Repository-relative files that call `fn` and check its results: tests/ files, or samples
  /// that CI runs with --check.
  std::vector<std::string_view> tests;
  Ulp ulp;
  std::string_view notes; ///< where the semantics differ from PyPTO / PyTorch
  /// Announced by another change but not in its header yet: the generator refuses to write the
  /// docs while such a row exists (the row must be completed or dropped).
  bool planned = false;
};

/// Every row, in doc order.
const std::vector<OpRow> &ops();
/// The row of `fn` ("pto::exp"), or nullptr.
const OpRow *find(std::string_view fn);
/// The last component of `fn`: "exp" for "pto::exp".
std::string_view short_name(std::string_view fn);

/// One operator name of ../shared/reference/sharding.md (MindSpore's distributed operator
/// table). The ptojit ops are the rows whose `mindspore` names include it (or one of its
/// '/'-separated spellings); `notes` says what the mapping leaves out, or why there is none.
struct ShardingName {
  std::string_view name;
  std::string_view notes = "";
};
const std::vector<ShardingName> &sharding_names();
/// The rows that implement a sharding.md name.
std::vector<const OpRow *> rows_for(std::string_view mindspore_name);

/// The source tree this build was configured from (headers, tests and docs are read below it).
std::string source_dir();

/// The text of docs/ops.md and docs/sharding_ops.md.
std::string render_ops_md();
std::string render_sharding_md();
/// Why the docs cannot be written truthfully now: planned rows, rows whose header does not
/// declare the function (read below `source_dir`), sharding names with neither a row nor a note.
/// Empty when all is well.
std::vector<std::string> problems(const std::string &source_dir);

} // namespace pto::registry
