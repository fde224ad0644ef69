// symbolic.cpp - Construction, constant folding, printing and host evaluation of
// SymbolicScalar expressions. Folding follows C semantics (truncating division), as PyPTO's.
#include "pto/symbolic.h"

#include <fmt/format.h>

#include <limits>

namespace pto {
namespace {

using Ptr = std::shared_ptr<const SymExpr>;

Ptr make_const(int64_t v) {
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Const;
  e->value = v;
  return e;
}

bool is_const(const Ptr &p, int64_t *v = nullptr) {
  if (p->tag != SymExpr::Tag::Const)
    return false;
  if (v)
    *v = p->value;
  return true;
}

/// Wrapping arithmetic: int64 overflow in a folded expression wraps instead of being UB.
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// C division; INT64_MIN / -1 wraps (as the generated code does) instead of trapping.
int64_t c_div(int64_t a, int64_t b) {
  if (b == -1)
    return wrap_sub(0, a);
  return a / b;
}
int64_t c_mod(int64_t a, int64_t b) {
  if (b == -1)
    return 0;
  return a % b;
}

const char *op_token(SymOp op) {
  switch (op) {
  case SymOp::Add: return "+";
  case SymOp::Sub: return "-";
  case SymOp::Mul: return "*";
  case SymOp::Div: return "/";
  case SymOp::Mod: return "%";
  case SymOp::Min: return "min";
  case SymOp::Max: return "max";
  case SymOp::Eq: return "==";
  case SymOp::Ne: return "!=";
  case SymOp::Lt: return "<";
  case SymOp::Le: return "<=";
  case SymOp::Gt: return ">";
  case SymOp::Ge: return ">=";
  case SymOp::And: return "&";
  case SymOp::Or: return "|";
  case SymOp::Neg: return "-";
  case SymOp::Not: return "~";
  case SymOp::Select: return "ternary";
  }
  return "?";
}

} // namespace

int64_t sym_fold(SymOp op, const std::vector<int64_t> &v, bool *div_zero, bool *overflow) {
  if (overflow) {
    int64_t r = 0;
    bool over = (op == SymOp::Add && __builtin_add_overflow(v[0], v[1], &r)) ||
                (op == SymOp::Sub && __builtin_sub_overflow(v[0], v[1], &r)) ||
                (op == SymOp::Mul && __builtin_mul_overflow(v[0], v[1], &r)) ||
                (op == SymOp::Neg && v[0] == INT64_MIN) ||
                (op == SymOp::Div && v[0] == INT64_MIN && v[1] == -1);
    *overflow = *overflow || over;
  }
  switch (op) {
  case SymOp::Add: return wrap_add(v[0], v[1]);
  case SymOp::Sub: return wrap_sub(v[0], v[1]);
  case SymOp::Mul: return wrap_mul(v[0], v[1]);
  case SymOp::Div:
    if (v[1] == 0) {
      *div_zero = true;
      return 0;
    }
    return c_div(v[0], v[1]);
  case SymOp::Mod:
    if (v[1] == 0) {
      *div_zero = true;
      return 0;
    }
    return c_mod(v[0], v[1]);
  case SymOp::Min: return std::min(v[0], v[1]);
  case SymOp::Max: return std::max(v[0], v[1]);
  case SymOp::Eq: return v[0] == v[1];
  case SymOp::Ne: return v[0] != v[1];
  case SymOp::Lt: return v[0] < v[1];
  case SymOp::Le: return v[0] <= v[1];
  case SymOp::Gt: return v[0] > v[1];
  case SymOp::Ge: return v[0] >= v[1];
  case SymOp::And: return (v[0] != 0) && (v[1] != 0);
  case SymOp::Or: return (v[0] != 0) || (v[1] != 0);
  case SymOp::Neg: return wrap_sub(0, v[0]);
  case SymOp::Not: return v[0] == 0;
  case SymOp::Select: return v[0] != 0 ? v[1] : v[2];
  }
  return 0;
}

SymbolicScalar::SymbolicScalar(int64_t v) : e_(make_const(v)) {}

SymbolicScalar::SymbolicScalar(const std::string &name) {
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Symbol;
  e->sym = SymKind::Named;
  e->name = name;
  e_ = e;
}

SymbolicScalar SymbolicScalar::symbol(SymKind kind, int64_t a, int64_t b, std::string name) {
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Symbol;
  e->sym = kind;
  e->a = a;
  e->b = b;
  e->name = std::move(name);
  return SymbolicScalar(Ptr(e));
}

SymbolicScalar SymbolicScalar::tensor_element(int64_t value, uint64_t trace_id, std::string name,
                                              const std::vector<SymbolicScalar> &indices) {
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Symbol;
  e->sym = SymKind::TensorElement;
  e->a = value;
  e->b = static_cast<int64_t>(trace_id);
  e->name = std::move(name);
  for (auto &i : indices)
    e->args.push_back(i.ptr());
  return SymbolicScalar(Ptr(e));
}

int64_t SymbolicScalar::concrete(std::source_location loc) const {
  if (!is_concrete())
    throw SymbolicError(loc, "concrete",
                        "not concrete value: `" + str() +
                            "` is only known at run time; use it where a SymbolicScalar is "
                            "accepted (offsets, valid shapes, loop bounds)");
  return e_->value;
}

SymbolicScalar SymbolicScalar::min(const SymbolicScalar &x) const { return pto::min(*this, x); }
SymbolicScalar SymbolicScalar::max(const SymbolicScalar &x) const { return pto::max(*this, x); }

std::string SymbolicScalar::str() const {
  const SymExpr &e = *e_;
  switch (e.tag) {
  case SymExpr::Tag::Const: return std::to_string(e.value);
  case SymExpr::Tag::Symbol:
    if (e.sym == SymKind::TensorElement) {
      std::string s = e.name + "[";
      for (size_t i = 0; i < e.args.size(); ++i)
        s += (i ? ", " : "") + SymbolicScalar(e.args[i]).str();
      return s + "]";
    }
    return e.name;
  case SymExpr::Tag::Op: break;
  }
  auto arg = [&](size_t i) { return SymbolicScalar(e.args[i]).str(); };
  switch (e.op) {
  case SymOp::Min:
  case SymOp::Max: return fmt::format("{}({}, {})", op_token(e.op), arg(0), arg(1));
  case SymOp::Neg:
  case SymOp::Not: return fmt::format("{}{}", op_token(e.op), arg(0));
  case SymOp::Select: return fmt::format("ternary({}, {}, {})", arg(0), arg(1), arg(2));
  default: return fmt::format("({} {} {})", arg(0), op_token(e.op), arg(1));
  }
}

bool SymbolicScalar::same_as(const SymbolicScalar &o) const {
  const SymExpr &a = *e_, &b = *o.e_;
  if (&a == &b)
    return true;
  if (a.tag != b.tag)
    return false;
  switch (a.tag) {
  case SymExpr::Tag::Const: return a.value == b.value;
  case SymExpr::Tag::Symbol:
    if (a.sym != b.sym || a.a != b.a || a.b != b.b ||
        (a.sym == SymKind::Named && a.name != b.name) || a.args.size() != b.args.size())
      return false;
    for (size_t i = 0; i < a.args.size(); ++i) // tensor-element indices
      if (!SymbolicScalar(a.args[i]).same_as(SymbolicScalar(b.args[i])))
        return false;
    return true;
  case SymExpr::Tag::Op:
    if (a.op != b.op || a.args.size() != b.args.size())
      return false;
    for (size_t i = 0; i < a.args.size(); ++i)
      if (!SymbolicScalar(a.args[i]).same_as(SymbolicScalar(b.args[i])))
        return false;
    return true;
  }
  return false;
}

uint64_t SymbolicScalar::hash() const {
  const SymExpr &e = *e_;
  auto mix = [](uint64_t h, uint64_t v) {
    return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
  };
  uint64_t h = static_cast<uint64_t>(e.tag) + 1;
  switch (e.tag) {
  case SymExpr::Tag::Const: return mix(h, static_cast<uint64_t>(e.value));
  case SymExpr::Tag::Symbol:
    h = mix(h, static_cast<uint64_t>(e.sym));
    h = mix(h, static_cast<uint64_t>(e.a));
    h = mix(h, static_cast<uint64_t>(e.b));
    if (e.sym == SymKind::Named)
      h = mix(h, std::hash<std::string>{}(e.name));
    for (auto &a : e.args)
      h = mix(h, SymbolicScalar(a).hash());
    return h;
  case SymExpr::Tag::Op:
    h = mix(h, static_cast<uint64_t>(e.op));
    for (auto &a : e.args)
      h = mix(h, SymbolicScalar(a).hash());
    return h;
  }
  return h;
}

SymbolicScalar sym_apply(SymOp op, std::vector<SymbolicScalar> args, std::source_location loc) {
  std::vector<int64_t> v;
  bool all_const = true;
  for (auto &a : args) {
    int64_t x;
    if (is_const(a.ptr(), &x))
      v.push_back(x);
    else
      all_const = false;
  }
  if ((op == SymOp::Div || op == SymOp::Mod) && is_const(args[1].ptr()) &&
      args[1].expr().value == 0)
    throw SymbolicError(loc, op == SymOp::Div ? "operator/" : "operator%",
                        "division or mod by zero: `" + args[0].str() + " " +
                            (op == SymOp::Div ? "/" : "%") + " 0`");
  if (all_const) {
    bool div_zero = false;
    return SymbolicScalar(sym_fold(op, v, &div_zero));
  }
  // Identities that keep printed expressions and generated code small.
  auto c = [&](size_t i, int64_t k) {
    int64_t x;
    return is_const(args[i].ptr(), &x) && x == k;
  };
  switch (op) {
  case SymOp::Add:
    if (c(0, 0))
      return args[1];
    if (c(1, 0))
      return args[0];
    break;
  case SymOp::Sub:
    if (c(1, 0))
      return args[0];
    if (args[0].same_as(args[1]))
      return SymbolicScalar(0);
    break;
  case SymOp::Mul:
    if (c(0, 1))
      return args[1];
    if (c(1, 1))
      return args[0];
    if (c(0, 0) || c(1, 0))
      return SymbolicScalar(0);
    break;
  case SymOp::Div:
    if (c(1, 1))
      return args[0];
    break;
  case SymOp::Min:
  case SymOp::Max:
    if (args[0].same_as(args[1]))
      return args[0];
    break;
  case SymOp::Select: {
    int64_t k;
    if (is_const(args[0].ptr(), &k))
      return k != 0 ? args[1] : args[2];
    if (args[1].same_as(args[2]))
      return args[1];
    break;
  }
  default: break;
  }
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Op;
  e->op = op;
  for (auto &a : args)
    e->args.push_back(a.ptr());
  return SymbolicScalar(Ptr(e));
}

SymbolicScalar operator+(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Add, {a, b});
}
SymbolicScalar operator-(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Sub, {a, b});
}
SymbolicScalar operator*(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Mul, {a, b});
}
SymbolicScalar operator/(const SymbolicScalar &a, const SymDivisor &b) {
  return sym_apply(SymOp::Div, {a, b.value}, b.loc);
}
SymbolicScalar operator%(const SymbolicScalar &a, const SymDivisor &b) {
  return sym_apply(SymOp::Mod, {a, b.value}, b.loc);
}
SymbolicScalar operator-(const SymbolicScalar &a) { return sym_apply(SymOp::Neg, {a}); }
SymbolicScalar operator==(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Eq, {a, b});
}
SymbolicScalar operator!=(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Ne, {a, b});
}
SymbolicScalar operator<(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Lt, {a, b});
}
SymbolicScalar operator<=(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Le, {a, b});
}
SymbolicScalar operator>(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Gt, {a, b});
}
SymbolicScalar operator>=(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Ge, {a, b});
}
SymbolicScalar operator&(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::And, {a, b});
}
SymbolicScalar operator|(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Or, {a, b});
}
SymbolicScalar operator!(const SymbolicScalar &a) { return sym_apply(SymOp::Not, {a}); }
SymbolicScalar operator~(const SymbolicScalar &a) { return sym_apply(SymOp::Not, {a}); }
SymbolicScalar &operator+=(SymbolicScalar &a, const SymbolicScalar &b) { return a = a + b; }
SymbolicScalar &operator-=(SymbolicScalar &a, const SymbolicScalar &b) { return a = a - b; }
SymbolicScalar &operator*=(SymbolicScalar &a, const SymbolicScalar &b) { return a = a * b; }

SymbolicScalar min(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Min, {a, b});
}
SymbolicScalar max(const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Max, {a, b});
}
SymbolicScalar ternary(const SymbolicScalar &c, const SymbolicScalar &a, const SymbolicScalar &b) {
  return sym_apply(SymOp::Select, {c, a, b});
}

int64_t evaluate(const SymbolicScalar &s, const SymbolEnv &env, const std::string &where,
                 bool *overflow) {
  const SymExpr &e = s.expr();
  switch (e.tag) {
  case SymExpr::Tag::Const: return e.value;
  case SymExpr::Tag::Symbol: return env(e);
  case SymExpr::Tag::Op: break;
  }
  if (e.op == SymOp::Select) // only the chosen side is evaluated, as generated code does
    return evaluate(SymbolicScalar(e.args[0]), env, where, overflow) != 0
               ? evaluate(SymbolicScalar(e.args[1]), env, where, overflow)
               : evaluate(SymbolicScalar(e.args[2]), env, where, overflow);
  // `&` and `|` short-circuit (as generated code does): a right operand that reads a tensor
  // element or divides is only evaluated when it decides the result.
  if (e.op == SymOp::And)
    return evaluate(SymbolicScalar(e.args[0]), env, where, overflow) != 0 &&
           evaluate(SymbolicScalar(e.args[1]), env, where, overflow) != 0;
  if (e.op == SymOp::Or)
    return evaluate(SymbolicScalar(e.args[0]), env, where, overflow) != 0 ||
           evaluate(SymbolicScalar(e.args[1]), env, where, overflow) != 0;
  std::vector<int64_t> v;
  for (auto &a : e.args)
    v.push_back(evaluate(SymbolicScalar(a), env, where, overflow));
  bool div_zero = false;
  int64_t r = sym_fold(e.op, v, &div_zero, overflow);
  if (div_zero)
    throw RuntimeError(where, "SymbolicScalar",
                       "integer division by zero at run time in `" + s.str() + "`");
  return r;
}

void for_each_symbol(const SymbolicScalar &s, const std::function<void(const SymExpr &)> &fn) {
  const SymExpr &e = s.expr();
  if (e.tag == SymExpr::Tag::Symbol)
    fn(e);
  for (auto &a : e.args)
    for_each_symbol(SymbolicScalar(a), fn);
}

bool mentions(const SymbolicScalar &s, SymKind kind) {
  bool found = false;
  for_each_symbol(s, [&](const SymExpr &e) { found = found || e.sym == kind; });
  return found;
}

std::string str(const std::vector<SymbolicScalar> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i].str();
  return s + "]";
}

} // namespace pto
