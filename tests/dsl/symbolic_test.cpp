// symbolic_test.cpp - SymbolicScalar: constant folding with C semantics, identities, printing,
// concrete() and literal-zero errors, and host evaluation with an environment.
#include "pto/symbolic.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using pto::SymbolicScalar;

namespace {
int64_t c(const SymbolicScalar &s) { return s.concrete(); }

/// Evaluates `s` with named symbols bound from `vars`.
int64_t eval(const SymbolicScalar &s, const std::map<std::string, int64_t> &vars) {
  return pto::evaluate(s, [&](const pto::SymExpr &e) { return vars.at(e.name); });
}
} // namespace

TEST_CASE("folding: C truncation for / and % with negative operands") {
  SymbolicScalar a(-7), b(7);
  CHECK(c(b / 2) == 3);
  CHECK(c(a / 2) == -3); // truncates toward zero, not floor (-4)
  CHECK(c(b / -2) == -3);
  CHECK(c(a % 2) == -1); // remainder takes the dividend's sign
  CHECK(c(b % -2) == 1);
  CHECK(c(a % -2) == -1);
  CHECK(c(SymbolicScalar(6) / 3) == 2);
  CHECK(c(SymbolicScalar(2) + 3 * SymbolicScalar(4) - 1) == 13);
  CHECK(c(-SymbolicScalar(5)) == -5);
}

TEST_CASE("folding: min, max, ternary, comparisons and logical ops give 0/1") {
  SymbolicScalar three(3), five(5), zero(0);
  CHECK(c(pto::min(three, five)) == 3);
  CHECK(c(pto::max(three, five)) == 5);
  CHECK(c(three.min(-2)) == -2);
  CHECK(c(three.max(-2)) == 3);
  CHECK(c(pto::ternary(1, three, five)) == 3);
  CHECK(c(pto::ternary(zero, three, five)) == 5);
  CHECK(c(pto::ternary(-4, three, five)) == 3); // any non-zero condition is true
  CHECK(c(three == 3) == 1);
  CHECK(c(three != 3) == 0);
  CHECK(c(three < five) == 1);
  CHECK(c(three <= 3) == 1);
  CHECK(c(three > five) == 0);
  CHECK(c(three >= 4) == 0);
  CHECK(c(SymbolicScalar(2) & SymbolicScalar(4)) == 1); // logical: bitwise 2 & 4 would be 0
  CHECK(c(SymbolicScalar(2) & zero) == 0);
  CHECK(c(zero | zero) == 0);
  CHECK(c(zero | SymbolicScalar(8)) == 1);
  CHECK(c(!zero) == 1);
  CHECK(c(~SymbolicScalar(8)) == 0);
}

TEST_CASE("symbols stay symbolic; identities keep expressions small") {
  SymbolicScalar n("N");
  CHECK(n.is_symbol());
  CHECK_FALSE(n.is_concrete());
  CHECK((n + 1).is_expression());
  CHECK((n + 0).same_as(n));
  CHECK((n * 1).same_as(n));
  CHECK((n / 1).same_as(n));
  CHECK(c(n * 0) == 0);
  CHECK(c(n - n) == 0);
  CHECK(pto::min(n, n).same_as(n));
  CHECK(pto::ternary(1, n, 7).same_as(n));
  CHECK((n - 1).str() == "(N - 1)");
  CHECK(pto::min(n - SymbolicScalar("i0") * 16, 16).str() == "min((N - (i0 * 16)), 16)");
  CHECK((n + 1).same_as(n + 1));
  CHECK(!(n + 1).same_as(n + 2));
  CHECK((n + 1).hash() == (n + 1).hash());
}

TEST_CASE("concrete() on a run-time value is a SymbolicError") {
  SymbolicScalar n("N");
  CHECK_THROWS_AS(n.concrete(), pto::SymbolicError);
  CHECK_THROWS_WITH_AS((n * 2).concrete(), doctest::Contains("not concrete"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(n.concrete(), doctest::Contains("symbolic_test.cpp"), pto::SymbolicError);
}

TEST_CASE("division or modulo by a literal zero is a SymbolicError at the user's line") {
  SymbolicScalar n("N");
  CHECK_THROWS_AS(SymbolicScalar(5) / 0, pto::SymbolicError);
  CHECK_THROWS_AS(SymbolicScalar(5) % 0, pto::SymbolicError);
  CHECK_THROWS_AS(n / 0, pto::SymbolicError); // also when the dividend is symbolic
  CHECK_THROWS_WITH_AS(n % 0, doctest::Contains("symbolic_test.cpp:"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(n / SymbolicScalar(0), doctest::Contains("division or mod by zero"),
                       pto::SymbolicError);
}

TEST_CASE("evaluate() binds symbols and follows C semantics") {
  SymbolicScalar n("N"), i("i");
  auto e = (n * 3 - 7) / 2;
  CHECK(eval(e, {{"N", 5}}) == 4);  // (15 - 7) / 2
  CHECK(eval(e, {{"N", 1}}) == -2); // (3 - 7) / 2 truncates to -2
  CHECK(eval((n - i * 16).min(16), {{"N", 50}, {"i", 3}}) == 2);
  CHECK(eval((n - i * 16).min(16), {{"N", 50}, {"i", 1}}) == 16);
  CHECK(eval(n % 4, {{"N", -9}}) == -1);
  CHECK(eval(pto::max(n, i), {{"N", -9}, {"i", 2}}) == 2);
  CHECK(eval(n >= i, {{"N", 2}, {"i", 2}}) == 1);
  CHECK(eval(n & i, {{"N", 2}, {"i", 0}}) == 0);
  // A run-time zero divisor is a RuntimeError naming the expression...
  CHECK_THROWS_WITH_AS(eval(SymbolicScalar(10) / n, {{"N", 0}}), doctest::Contains("(10 / N)"),
                       pto::RuntimeError);
  // ...but ternary evaluates only the chosen side.
  CHECK(eval(pto::ternary(n, SymbolicScalar(10) / n, 0), {{"N", 0}}) == 0);
  CHECK(eval(pto::ternary(n, SymbolicScalar(10) / n, 0), {{"N", 5}}) == 2);
}
