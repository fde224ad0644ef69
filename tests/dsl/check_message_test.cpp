// check_message_test.cpp - ir::format_check, the one function that writes the text of a rule's
// error at trace time and at run time (Check ops, dsl/src/shape_rules.h): `{}` takes the next
// argument, `{+}` the exact sum of the next two, so a window's end near INT64_MAX is printed as
// the number it is (issue 8: run-time shmem and window messages printed wrapped ends).
#include "pto/ir/program.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using pto::ir::format_check;

TEST_CASE("format_check: {} takes the next argument, {+} the exact sum of the next two") {
  CHECK(format_check("window [{}, {+}) of dim 1", {"6", "6", "4"}) == "window [6, 10) of dim 1");
  // Sums past INT64_MAX and below INT64_MIN print exactly, not wrapped.
  CHECK(format_check("[{+})", {"9223372036854775807", "4"}) == "[9223372036854775811)");
  CHECK(format_check("[{+})", {"-9223372036854775808", "-1"}) == "[-9223372036854775809)");
  CHECK(format_check("[{+})", {"9223372036854775807", "9223372036854775807"}) ==
        "[18446744073709551614)");
  CHECK(format_check("{+}", {"-3", "3"}) == "0");
  // Symbolic arguments (a trace-time message) are joined, missing ones print as ?.
  CHECK(format_check("{+}", {"i0", "4"}) == "i0 + 4");
  CHECK(format_check("{} {+}", {"1"}) == "1 ? + ?");
  // Doubled braces are literal.
  CHECK(format_check("{{+}} {{}}", {}) == "{+} {}");
}
