// env.h - The one parser of ptojit's environment variables (PTO_*), and their table.
//
// Every PTO_* variable the library reads is described once in `variables()` (its kind, the values
// or range it accepts, what it does) and read only through `read_*` below, which check the value
// strictly: an unknown name, an empty item of a list, a number that is not a decimal integer, is
// negative or out of range, or trailing text is an ArgumentError naming the variable, the value
// given and the values accepted, at the user's call site. Set to the empty string, a variable is
// unset (so `PTO_DUMP= prog` turns dumping off). `check_all` validates every variable of the table
// that is set, including those the current transport or executor does not read (PTO_MPI_* on the
// threads transport): a typo is never silently ignored, whatever the backend. The test suites'
// own variables (PTO_FUZZ_*, ...) use the same parser with their own `Var`s.
#pragma once

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::env {

/// What a variable holds.
enum class Kind {
  Choice,  ///< one of `values`
  List,    ///< a comma-separated list of `values` (each once or more), or `all` when `all_ok`
  Integer, ///< a decimal integer in [lo, hi]
  Text,    ///< any text (a path)
};

/// One variable: its name, kind, accepted values or range, and a one-line description.
struct Var {
  const char *name = "";
  Kind kind = Kind::Text;
  std::vector<std::string> values; ///< Choice and List: the accepted names
  int64_t lo = 0, hi = 0;          ///< Integer: the accepted range, inclusive
  bool all_ok = false;             ///< List: `all` stands for every value
  const char *what = "";           ///< one line for docs and messages (unit, default)
};

/// Every PTO_* variable the library reads, in the order of the README's table.
const std::vector<Var> &variables();

/// The table's entry for `name`; InternalError for a name not in the table (a ptojit bug).
const Var &var(const char *name);

/// The raw value of `v`, or nullopt when unset or empty.
std::optional<std::string> raw(const Var &v);

/// The value of Choice variable `v`, checked; nullopt when unset or empty. `context` is appended
/// to an error's message (e.g. " (tracing kernel 'k')"). Throws ArgumentError at `loc`.
std::optional<std::string> read_choice(const Var &v, const std::source_location &loc,
                                       const std::string &context = "");

/// The items of List variable `v` (`all` expanded), checked; nullopt when unset or empty.
/// Throws ArgumentError at `loc` for an empty item, an unknown name or `all` where not allowed.
std::optional<std::vector<std::string>> read_list(const Var &v, const std::source_location &loc,
                                                  const std::string &context = "");

/// The value of Integer variable `v`, checked: decimal digits only (no sign, no space, no
/// trailing text), within [v.lo, v.hi]; nullopt when unset or empty. Throws ArgumentError at `loc`.
std::optional<int64_t> read_integer(const Var &v, const std::source_location &loc,
                                    const std::string &context = "");

/// The value of Text variable `v`; nullopt when unset or empty.
std::optional<std::string> read_text(const Var &v);

/// Checks the value of every variable of variables() that is set (see the header comment).
/// Throws ArgumentError at `loc` for the first bad one. Also warns (stderr, once per name per
/// process) about each set PTO_* name that is neither in variables() nor one of the test
/// suites' and benchmarks' own (unknown_names()), with the nearest known name: a misspelt
/// name is not silently ignored either.
void check_all(const std::source_location &loc, const std::string &context = "");

/// The set PTO_* names of the environment that ptojit does not know: not in variables() and
/// not starting with a prefix its test suites and benchmarks use (kSuitePrefixes in env.cpp:
/// PTO_FUZZ_, PTO_PROPERTY_, PTO_COMPARE_, ...). Each with the nearest known name (edit
/// distance), as "PTO_RUN_MOD (did you mean PTO_RUN_MODE?)".
std::vector<std::string> unknown_names();

} // namespace pto::env
