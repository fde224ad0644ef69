// symbolic.cpp - Construction, constant folding, printing and host evaluation of
// SymbolicScalar expressions. Folding follows C semantics (truncating division), as PyPTO's.
#include "pto/symbolic.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace pto {
namespace {

using Ptr = std::shared_ptr<const SymExpr>;

/// same_as and evaluate walk expressions up to this many nodes (written out) as trees; larger
/// ones remember the nodes they have met, so a DAG whose tree form is exponential takes linear
/// time. (walk always does.)
constexpr uint64_t kSmallTree = 64;

/// Sets `e`'s nodes (1 + the args', saturating at 2^62) and reads (the args' most) from its args.
void count_nodes(SymExpr &e) {
  constexpr uint64_t cap = uint64_t{1} << 62;
  e.nodes = 1;
  e.reads = 0;
  for (auto &a : e.args) {
    e.nodes = a->nodes >= cap - e.nodes ? cap : e.nodes + a->nodes;
    e.reads = std::max(e.reads, a->reads);
  }
}

/// Depth-first over the distinct nodes of `root` with an explicit stack: `fn(node)` before its
/// children when `post` is false, after them (in argument order) when true.
template <class Fn> void walk(const SymExpr &root, bool post, Fn &&fn) {
  if (root.args.empty()) {
    fn(root);
    return;
  }
  std::unordered_set<const SymExpr *> seen;
  std::vector<std::pair<const SymExpr *, bool>> st{{&root, false}}; // (node, children done)
  while (!st.empty()) {
    auto [n, done] = st.back();
    st.pop_back();
    if (done) {
      fn(*n);
      continue;
    }
    if (!seen.insert(n).second)
      continue;
    if (post)
      st.emplace_back(n, true);
    else
      fn(*n);
    for (size_t i = n->args.size(); i-- > 0;)
      st.emplace_back(n->args[i].get(), false);
  }
}

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

/// The infix form of a binary operator, with its spaces (" + ").
const char *infix(SymOp op) {
  switch (op) {
  case SymOp::Add:
    return " + ";
  case SymOp::Sub:
    return " - ";
  case SymOp::Mul:
    return " * ";
  case SymOp::Div:
    return " / ";
  case SymOp::Mod:
    return " % ";
  case SymOp::Eq:
    return " == ";
  case SymOp::Ne:
    return " != ";
  case SymOp::Lt:
    return " < ";
  case SymOp::Le:
    return " <= ";
  case SymOp::Gt:
    return " > ";
  case SymOp::Ge:
    return " >= ";
  case SymOp::And:
    return " & ";
  case SymOp::Or:
    return " | ";
  case SymOp::Min:
  case SymOp::Max:
  case SymOp::Neg:
  case SymOp::Not:
  case SymOp::Select:
    break; // printed as calls or prefixes
  }
  return " ? ";
}

const char *op_token(SymOp op) {
  switch (op) {
  case SymOp::Add:
    return "+";
  case SymOp::Sub:
    return "-";
  case SymOp::Mul:
    return "*";
  case SymOp::Div:
    return "/";
  case SymOp::Mod:
    return "%";
  case SymOp::Min:
    return "min";
  case SymOp::Max:
    return "max";
  case SymOp::Eq:
    return "==";
  case SymOp::Ne:
    return "!=";
  case SymOp::Lt:
    return "<";
  case SymOp::Le:
    return "<=";
  case SymOp::Gt:
    return ">";
  case SymOp::Ge:
    return ">=";
  case SymOp::And:
    return "&";
  case SymOp::Or:
    return "|";
  case SymOp::Neg:
    return "-";
  case SymOp::Not:
    return "~";
  case SymOp::Select:
    return "ternary";
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
  case SymOp::Add:
    return wrap_add(v[0], v[1]);
  case SymOp::Sub:
    return wrap_sub(v[0], v[1]);
  case SymOp::Mul:
    return wrap_mul(v[0], v[1]);
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
  case SymOp::Min:
    return std::min(v[0], v[1]);
  case SymOp::Max:
    return std::max(v[0], v[1]);
  case SymOp::Eq:
    return v[0] == v[1];
  case SymOp::Ne:
    return v[0] != v[1];
  case SymOp::Lt:
    return v[0] < v[1];
  case SymOp::Le:
    return v[0] <= v[1];
  case SymOp::Gt:
    return v[0] > v[1];
  case SymOp::Ge:
    return v[0] >= v[1];
  case SymOp::And:
    return (v[0] != 0) && (v[1] != 0);
  case SymOp::Or:
    return (v[0] != 0) || (v[1] != 0);
  case SymOp::Neg:
    return wrap_sub(0, v[0]);
  case SymOp::Not:
    return v[0] == 0;
  case SymOp::Select:
    return v[0] != 0 ? v[1] : v[2];
  }
  return 0;
}

SymExpr::~SymExpr() {
  // Unlink the children only this node owns and release them from a flat list: each released
  // node then holds no child it solely owns, so no destructor nests more than one level deep.
  if (args.empty())
    return;
  std::vector<Ptr> todo;
  auto take = [&](std::vector<Ptr> &from) {
    for (auto &a : from)
      if (a && a.use_count() == 1)
        todo.push_back(std::move(a));
  };
  take(args);
  while (!todo.empty()) {
    Ptr p = std::move(todo.back());
    todo.pop_back();
    // The node was built non-const (make_shared<SymExpr>) and `p` is its only owner.
    take(const_cast<SymExpr &>(*p).args);
  }
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
                                              const std::vector<SymbolicScalar> &indices,
                                              uint32_t offset_reads, int64_t read) {
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Symbol;
  e->sym = SymKind::TensorElement;
  e->a = value;
  e->read = read;
  e->b = static_cast<int64_t>(trace_id);
  e->name = std::move(name);
  for (auto &i : indices)
    e->args.push_back(i.ptr());
  count_nodes(*e);
  e->reads = std::max(e->reads, offset_reads) + 1;
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
  // Written out left to right from a stack of nodes and literal tokens (no recursion).
  struct Item {
    const SymExpr *e;
    const char *lit;
  };
  std::string out;
  std::vector<Item> st{{e_.get(), nullptr}};
  uint64_t budget = kMaxSymNodes;
  auto node = [&](const Ptr &p) { st.push_back({p.get(), nullptr}); };
  auto lit = [&](const char *l) { st.push_back({nullptr, l}); };
  while (!st.empty()) {
    Item it = st.back();
    st.pop_back();
    if (it.lit) {
      out += it.lit;
      continue;
    }
    if (budget-- == 0) {
      out += "...";
      break;
    }
    const SymExpr &e = *it.e;
    switch (e.tag) {
    case SymExpr::Tag::Const:
      out += std::to_string(e.value);
      continue;
    case SymExpr::Tag::Symbol:
      out += e.name;
      if (e.sym == SymKind::TensorElement) {
        lit("]");
        for (size_t i = e.args.size(); i-- > 0;) {
          node(e.args[i]);
          if (i)
            lit(", ");
        }
        lit("[");
      }
      continue;
    case SymExpr::Tag::Op:
      break;
    }
    switch (e.op) {
    case SymOp::Min:
    case SymOp::Max:
    case SymOp::Select:
      out += e.op == SymOp::Select ? "ternary(" : e.op == SymOp::Min ? "min(" : "max(";
      lit(")");
      for (size_t i = e.args.size(); i-- > 0;) {
        node(e.args[i]);
        if (i)
          lit(", ");
      }
      break;
    case SymOp::Neg:
    case SymOp::Not:
      out += op_token(e.op);
      node(e.args[0]);
      break;
    case SymOp::Add:
    case SymOp::Sub:
    case SymOp::Mul:
    case SymOp::Div:
    case SymOp::Mod:
    case SymOp::Eq:
    case SymOp::Ne:
    case SymOp::Lt:
    case SymOp::Le:
    case SymOp::Gt:
    case SymOp::Ge:
    case SymOp::And:
    case SymOp::Or:
      out += "(";
      lit(")");
      node(e.args[1]);
      lit(infix(e.op));
      node(e.args[0]);
      break;
    }
  }
  return out;
}

bool SymbolicScalar::same_as(const SymbolicScalar &o) const {
  // Pairs of nodes still to compare; a pair met before is not compared again (shared parts).
  std::vector<std::pair<const SymExpr *, const SymExpr *>> todo{{e_.get(), o.e_.get()}};
  const bool dedup = e_->nodes > kSmallTree;
  std::set<std::pair<const SymExpr *, const SymExpr *>> seen;
  while (!todo.empty()) {
    auto [pa, pb] = todo.back();
    todo.pop_back();
    if (pa == pb || (dedup && !seen.insert({pa, pb}).second))
      continue;
    const SymExpr &a = *pa, &b = *pb;
    if (a.tag != b.tag || a.nodes != b.nodes || a.args.size() != b.args.size())
      return false;
    switch (a.tag) {
    case SymExpr::Tag::Const:
      if (a.value != b.value)
        return false;
      break;
    case SymExpr::Tag::Symbol: // tensor-element indices are compared as args
      if (a.sym != b.sym || a.a != b.a || a.b != b.b ||
          (a.sym == SymKind::Named && a.name != b.name))
        return false;
      break;
    case SymExpr::Tag::Op:
      if (a.op != b.op)
        return false;
      break;
    }
    for (size_t i = 0; i < a.args.size(); ++i)
      todo.emplace_back(a.args[i].get(), b.args[i].get());
  }
  return true;
}

uint64_t SymbolicScalar::hash() const {
  auto mix = [](uint64_t h, uint64_t v) {
    return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
  };
  // Children before parents, each distinct node once.
  std::unordered_map<const SymExpr *, uint64_t> of;
  uint64_t last = 0;
  walk(*e_, /*post=*/true, [&](const SymExpr &e) {
    uint64_t h = static_cast<uint64_t>(e.tag) + 1;
    switch (e.tag) {
    case SymExpr::Tag::Const:
      h = mix(h, static_cast<uint64_t>(e.value));
      break;
    case SymExpr::Tag::Symbol:
      h = mix(h, static_cast<uint64_t>(e.sym));
      h = mix(h, static_cast<uint64_t>(e.a));
      h = mix(h, static_cast<uint64_t>(e.b));
      if (e.sym == SymKind::Named)
        h = mix(h, std::hash<std::string>{}(e.name));
      break;
    case SymExpr::Tag::Op:
      h = mix(h, static_cast<uint64_t>(e.op));
      break;
    }
    for (auto &a : e.args)
      h = mix(h, of.at(a.get()));
    of[&e] = h;
    last = h;
  });
  return last;
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
    bool overflow = false;
    int64_t r = sym_fold(op, v, &div_zero, &overflow);
    // A wrapped value is never folded: the expression stays a node, which run-time
    // evaluation reports where its value matters (loop bounds, shapes: "overflows int64" at
    // the user's op) and otherwise wraps exactly as folding would have.
    if (!overflow)
      return SymbolicScalar(r);
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
  case SymOp::Mod:
  case SymOp::Eq:
  case SymOp::Ne:
  case SymOp::Lt:
  case SymOp::Le:
  case SymOp::Gt:
  case SymOp::Ge:
  case SymOp::And:
  case SymOp::Or:
  case SymOp::Neg:
  case SymOp::Not:
    break; // no identity to simplify by
  }
  auto e = std::make_shared<SymExpr>();
  e->tag = SymExpr::Tag::Op;
  e->op = op;
  for (auto &a : args)
    e->args.push_back(a.ptr());
  count_nodes(*e);
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
                 const ElementEnv &elements, bool *overflow) {
  // A stack machine: each frame is a node and how many of its operands are done; operand
  // values wait on `vals`. Large expressions remember each node's value (shared parts).
  struct Frame {
    const SymExpr *e;
    size_t stage;
  };
  std::vector<Frame> st{{s.ptr().get(), 0}};
  std::vector<int64_t> vals;
  std::unordered_map<const SymExpr *, int64_t> memo;
  const bool use_memo = s.expr().nodes > kSmallTree;
  auto pop = [&] {
    int64_t v = vals.back();
    vals.pop_back();
    return v;
  };
  auto done = [&](int64_t v) {
    if (use_memo)
      memo[st.back().e] = v;
    st.pop_back();
    vals.push_back(v);
  };
  auto push = [&](const Ptr &p) { st.push_back({p.get(), 0}); };
  while (!st.empty()) {
    const SymExpr &e = *st.back().e;
    const size_t stage = st.back().stage++;
    if (stage == 0 && use_memo)
      if (auto it = memo.find(&e); it != memo.end()) {
        st.pop_back();
        vals.push_back(it->second);
        continue;
      }
    if (e.tag == SymExpr::Tag::Const) {
      done(e.value);
      continue;
    }
    if (e.tag == SymExpr::Tag::Symbol) {
      if (e.sym != SymKind::TensorElement || !elements) {
        done(env(e));
      } else if (stage < e.args.size()) {
        push(e.args[stage]);
      } else {
        std::vector<int64_t> idx(vals.end() - static_cast<long>(e.args.size()), vals.end());
        vals.resize(vals.size() - e.args.size());
        done(elements(e, idx));
      }
      continue;
    }
    // `&`, `|` and ternary evaluate the right operand only when it decides the result (as
    // generated code does): one that reads a tensor element or divides may be skipped.
    if (e.op == SymOp::Select) {
      if (stage == 0)
        push(e.args[0]);
      else if (stage == 1)
        push(e.args[pop() != 0 ? 1 : 2]);
      else
        done(pop());
      continue;
    }
    if (e.op == SymOp::And || e.op == SymOp::Or) {
      if (stage == 0) {
        push(e.args[0]);
      } else if (stage == 1) {
        const bool l = pop() != 0;
        if (l == (e.op == SymOp::Or))
          done(l ? 1 : 0);
        else
          push(e.args[1]);
      } else {
        done(pop() != 0 ? 1 : 0);
      }
      continue;
    }
    if (stage < e.args.size()) {
      push(e.args[stage]);
      continue;
    }
    std::vector<int64_t> v(vals.end() - static_cast<long>(e.args.size()), vals.end());
    vals.resize(vals.size() - e.args.size());
    bool div_zero = false;
    int64_t r = sym_fold(e.op, v, &div_zero, overflow);
    if (div_zero)
      throw RuntimeError(where, "SymbolicScalar",
                         "integer division by zero at run time in `" + s.str() + "`");
    done(r);
  }
  return vals.back();
}

void for_each_symbol(const SymbolicScalar &s, const std::function<void(const SymExpr &)> &fn) {
  walk(s.expr(), /*post=*/false, [&](const SymExpr &e) {
    if (e.tag == SymExpr::Tag::Symbol)
      fn(e);
  });
}

void for_each_node(const SymbolicScalar &s, const std::function<void(const SymExpr &)> &fn) {
  walk(s.expr(), /*post=*/true, fn);
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
