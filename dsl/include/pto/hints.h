// hints.h - PyPTO's compiler hints, accepted so that a PyPTO program ports line by line (issue
// 13, item 1): `@pypto.jit(pass_options={...})`, `pypto.set_pass_options({...})` and
// `with pypto.options(pass_options={...})` (reference §1.1, §1.5). They tune Ascend passes
// (buffer counts, L1 reuse, sub-graph merging) that a CPU build does not have, so ptojit keeps
// them and computes the same results without them.
#pragma once

#include <cstdint>
#include <map>
#include <source_location>
#include <string>
#include <variant>

namespace pto {

/// One option value as PyPTO's dicts hold them: an int, a float, a bool or a string.
using HintValue = std::variant<int64_t, double, bool, std::string>;
/// A PyPTO option dict: `{{"vec_nbuffer_setting", 2}, {"cube_l1_reuse_mode", "auto"}}`.
using PassOptions = std::map<std::string, HintValue>;

/// As PyPTO `pypto.set_pass_options(opts)`: accepted inside a traced kernel or outside one; it
/// changes nothing ptojit computes. An empty key is an ArgumentError naming "set_pass_options".
void set_pass_options(const PassOptions &opts,
                      std::source_location loc = std::source_location::current());

} // namespace pto
