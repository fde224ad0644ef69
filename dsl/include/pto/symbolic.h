// symbolic.h - pto::SymbolicScalar: an int64 expression over constants and run-time symbols
// (loop indices, dynamic input dims, PE numbers, tensor elements), as PyPTO `SymbolicScalar`
// (reference §4).
// Folds when concrete; otherwise generated code evaluates it at run time.
#pragma once

#include "pto/error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace pto {

/// Operators of a symbolic expression. Integer semantics are C's: `/` truncates toward zero,
/// `%` takes the dividend's sign. Comparisons and logical ops give 0 or 1.
enum class SymOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Min,
  Max,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or, ///< logical (non-zero is true), as PyPTO `&` and `|`
  Neg,
  Not,    ///< unary; `Not` is logical, as PyPTO `~`
  Select, ///< Select(c, a, b) = c != 0 ? a : b, as PyPTO `tenary`
};

/// What a run-time symbol stands for.
enum class SymKind : uint8_t {
  LoopIndex, ///< the index of loop `a` (a loop id in its program)
  InputDim,  ///< dim `b` of kernel tensor parameter `a`
  MyPe,      ///< this PE's number in group `a`, as PyPTO `my_symbolic_pe`
  Named,     ///< a free symbol, only meaningful to the interpreter's environment
  /// One element of value `a` (a value id of the program traced with trace id `b`) at the indices
  /// `args` (one per dim), read where the expression is evaluated, as PyPTO `GetTensorData`
  /// (Tensor::at). Integer and bool elements only, widened to int64 (bool: 0/1).
  TensorElement,
  LoopBegin, ///< 1 on the first iteration of loop `a`, else 0 (PyPTO `is_loop_begin`)
  LoopEnd,   ///< 1 on the last iteration of loop `a`, else 0 (PyPTO `is_loop_end`)
};

/// The most nodes an expression used by a traced op may have when written out as a tree (a
/// shared subexpression counts once per use): Recorder::check_symbols throws SymbolicError past
/// it, and SymbolicScalar::str prints at most this many nodes. Far above any hand-written
/// expression (a sum of 100000 terms has 200000 nodes), it bounds the code and text an
/// expression that doubles itself in a loop (`s = s + s`) would expand to.
inline constexpr uint64_t kMaxSymNodes = uint64_t{1} << 20;

/// One node of a symbolic expression tree (a DAG: subexpressions are shared). Immutable and
/// shared. Every walk over it (printing, folding, hashing, evaluation, code generation) is
/// iterative, so expressions of any depth are fine.
struct SymExpr {
  enum class Tag : uint8_t { Const, Symbol, Op } tag = Tag::Const;
  int64_t value = 0;            ///< Tag::Const
  SymKind sym = SymKind::Named; ///< Tag::Symbol
  int64_t a = 0, b = 0;         ///< Tag::Symbol: kind-specific ids (see SymKind)
  /// SymKind::TensorElement: the read's index in its program's `element_reads` (the Tensor::at
  /// call a run-time index error names), or -1. Not part of the expression's identity.
  int64_t read = -1;
  std::string name;      ///< Tag::Symbol: printed name (`i0`, `N`, `pe`)
  SymOp op = SymOp::Add; ///< Tag::Op
  /// Tag::Op operands; for a SymKind::TensorElement symbol, its indices.
  std::vector<std::shared_ptr<const SymExpr>> args;
  /// Nodes of the expression written out as a tree (1 + the args' nodes), saturating at 2^62;
  /// set when the node is built.
  uint64_t nodes = 1;
  /// How deeply tensor-element reads nest in it: a read counts 1 + the most of its indices and
  /// (reads of a view) of the view's offsets, which are evaluated to read it. Set when built.
  uint32_t reads = 0;
  /// Releases the nodes only this one owns without recursion (a deep chain would otherwise
  /// overflow the stack in nested shared_ptr destructors).
  ~SymExpr();
};

class SymbolicScalar;

/// A divisor for `/` and `%` that remembers the user's source line, so that a division by a
/// literal zero can be reported where it was written.
struct SymDivisor;

/// An int64 scalar that is either known now or evaluated at run time, as PyPTO `SymbolicScalar`.
/// Implicitly built from integers. Cheap to copy (a shared immutable tree).
class SymbolicScalar {
public:
  SymbolicScalar() : SymbolicScalar(int64_t{0}) {}
  SymbolicScalar(int64_t v);
  SymbolicScalar(int v) : SymbolicScalar(int64_t{v}) {}
  SymbolicScalar(long long v) : SymbolicScalar(static_cast<int64_t>(v)) {}
  /// A free symbol named `name` (the interpreter binds it; generated code cannot).
  explicit SymbolicScalar(const std::string &name);
  explicit SymbolicScalar(std::shared_ptr<const SymExpr> e) : e_(std::move(e)) {}

  /// A run-time symbol of the given kind (used by loops, jit parameters and my_symbolic_pe).
  static SymbolicScalar symbol(SymKind kind, int64_t a, int64_t b, std::string name);
  /// A SymKind::TensorElement symbol: element `indices` of value `value` (named `name`) of the
  /// trace `trace_id`, printed `name[i, j]`. Built by Tensor::at, which checks its operands;
  /// `offset_reads` is the most SymExpr::reads of the value's view offsets (0 for a non-view);
  /// `read` is SymExpr::read.
  static SymbolicScalar tensor_element(int64_t value, uint64_t trace_id, std::string name,
                                       const std::vector<SymbolicScalar> &indices,
                                       uint32_t offset_reads = 0, int64_t read = -1);

  /// As PyPTO: a constant.
  bool is_immediate() const { return e_->tag == SymExpr::Tag::Const; }
  /// As PyPTO: a bare run-time symbol.
  bool is_symbol() const { return e_->tag == SymExpr::Tag::Symbol; }
  /// As PyPTO: an operator applied to other scalars (not folded away).
  bool is_expression() const { return e_->tag == SymExpr::Tag::Op; }
  /// True when the value is known at trace time.
  bool is_concrete() const { return is_immediate(); }
  /// The value. Throws SymbolicError ("not concrete") when it is only known at run time.
  int64_t concrete(std::source_location loc = std::source_location::current()) const;

  /// `min(this, x)` and `max(this, x)`, as PyPTO `s.min(x)` / `s.max(x)`.
  SymbolicScalar min(const SymbolicScalar &x) const;
  SymbolicScalar max(const SymbolicScalar &x) const;

  /// Readable form, e.g. `min((N - (i0 * 16)), 16)`. An expression of more than kMaxSymNodes
  /// nodes (written out) prints its first kMaxSymNodes nodes and `...`.
  std::string str() const;
  const SymExpr &expr() const { return *e_; }
  const std::shared_ptr<const SymExpr> &ptr() const { return e_; }
  /// Structural equality (same tree shape and leaves); not the symbolic `==`.
  bool same_as(const SymbolicScalar &o) const;
  /// A structural hash consistent with same_as.
  uint64_t hash() const;

private:
  std::shared_ptr<const SymExpr> e_;
};

struct SymDivisor {
  SymDivisor(int64_t v, std::source_location l = std::source_location::current())
      : value(v), loc(l) {}
  SymDivisor(int v, std::source_location l = std::source_location::current())
      : value(int64_t{v}), loc(l) {}
  SymDivisor(const SymbolicScalar &v, std::source_location l = std::source_location::current())
      : value(v), loc(l) {}
  SymbolicScalar value;
  std::source_location loc;
};

/// Builds `op(args...)`, folding constants (C semantics). Throws SymbolicError on a division or
/// modulo by a literal zero, reported at `loc`.
SymbolicScalar sym_apply(SymOp op, std::vector<SymbolicScalar> args,
                         std::source_location loc = std::source_location::current());

SymbolicScalar operator+(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator-(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator*(const SymbolicScalar &a, const SymbolicScalar &b);
/// Integer division truncating toward zero (C, and PyPTO's folding). A literal zero divisor
/// throws SymbolicError; a run-time zero makes the kernel fail with RuntimeError.
SymbolicScalar operator/(const SymbolicScalar &a, const SymDivisor &b);
/// Remainder with the dividend's sign (C). Zero divisors as for `/`.
SymbolicScalar operator%(const SymbolicScalar &a, const SymDivisor &b);
SymbolicScalar operator-(const SymbolicScalar &a);
/// Comparisons give a 0/1 SymbolicScalar (as PyPTO), not a bool.
SymbolicScalar operator==(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator!=(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator<(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator<=(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator>(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator>=(const SymbolicScalar &a, const SymbolicScalar &b);
/// Logical and / or / not (PyPTO spells them `&`, `|`, `~`); results are 0 or 1.
SymbolicScalar operator&(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator|(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar operator!(const SymbolicScalar &a);
SymbolicScalar operator~(const SymbolicScalar &a);
SymbolicScalar &operator+=(SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar &operator-=(SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar &operator*=(SymbolicScalar &a, const SymbolicScalar &b);

/// As PyPTO `pypto.min` / `pypto.max`.
SymbolicScalar min(const SymbolicScalar &a, const SymbolicScalar &b);
SymbolicScalar max(const SymbolicScalar &a, const SymbolicScalar &b);
/// `c != 0 ? a : b`, evaluated at run time unless `c` is concrete (PyPTO `tenary`).
SymbolicScalar ternary(const SymbolicScalar &c, const SymbolicScalar &a, const SymbolicScalar &b);

/// Binds symbols to values when evaluating on the host (interpreter, tests).
using SymbolEnv = std::function<int64_t(const SymExpr &symbol)>;
/// Reads a SymKind::TensorElement symbol at its evaluated indices (one per dim).
using ElementEnv =
    std::function<int64_t(const SymExpr &element, const std::vector<int64_t> &indices)>;
/// Evaluates `s` with C semantics. Throws RuntimeError on division or modulo by zero, naming
/// `where` (a "file:line" string) and the expression. `&`, `|` and `ternary` evaluate only the
/// operands that decide the result (as C's `&&`, `||` and `?:`, and as generated code does), so
/// `(i < n) & (x.at({i}) == 1)` never reads x out of range. With `elements`, the indices of a
/// tensor-element symbol are evaluated here (no recursion through the environment, so reads
/// nested to any depth are fine) and `elements` reads it; without, `env` reads it. Iterative:
/// any depth is fine; each shared subexpression of a large expression is evaluated once.
/// Arithmetic wraps on int64 overflow; when `overflow` is given, `*overflow` is also set whenever
/// a `+`, `-`, `*`, unary `-` or `/` (INT64_MIN / -1) evaluated overflowed (callers that size
/// memory or count iterations turn that into an error, as generated code does).
int64_t evaluate(const SymbolicScalar &s, const SymbolEnv &env, const std::string &where = "",
                 const ElementEnv &elements = nullptr, bool *overflow = nullptr);

/// Folds `op` over concrete operands with C semantics; sets `*div_zero` (and returns 0) for a
/// division or modulo by zero, and `*overflow` (when given) when the wrapped result differs
/// from the exact one.
int64_t sym_fold(SymOp op, const std::vector<int64_t> &operands, bool *div_zero,
                 bool *overflow = nullptr);

/// `[a, b, c]` with each dim printed by SymbolicScalar::str.
std::string str(const std::vector<SymbolicScalar> &dims);

/// Calls `fn` once on every distinct symbol node of `s` (including those inside tensor-element
/// indices), parents before children.
void for_each_symbol(const SymbolicScalar &s, const std::function<void(const SymExpr &)> &fn);
/// Calls `fn` once on every distinct node of `s`, children (in argument order) before parents.
/// Iterative: any depth is fine.
void for_each_node(const SymbolicScalar &s, const std::function<void(const SymExpr &)> &fn);
/// True when `s` mentions a symbol of kind `kind`.
bool mentions(const SymbolicScalar &s, SymKind kind);

} // namespace pto
