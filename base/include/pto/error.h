// error.h - The typed exceptions every ptojit layer throws. Header-only, so the runtime (which
// depends on nothing else of ours) and the DSL share one hierarchy.
//
// Every user-facing error names the user's source location, the op as the user spelled it, what
// was expected and what was given: `softmax.cpp:14: add: shapes [4, 8] and [4, 9] do not
// broadcast`.
#pragma once

#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <string>

namespace pto {

/// Formats `file:line` of a call site, with the directory part stripped (messages stay short).
inline std::string format_location(const std::source_location &loc) {
  std::string file = loc.file_name() ? loc.file_name() : "";
  if (auto slash = file.find_last_of('/'); slash != std::string::npos)
    file = file.substr(slash + 1);
  if (file.empty())
    return "<unknown>";
  return file + ":" + std::to_string(loc.line());
}

/// While alive, names the public op the user called on this thread: composite ops (nn_ops.h,
/// mean and var, broadcast_to, split, stack, ones) are traced from other ops, whose names would
/// mean nothing to the user. Every pto::Error constructed on this thread meanwhile names this op
/// instead of the inner one that raised it, and the recorder stamps it on the ops traced meanwhile
/// (ir::Op::user_op), so their run-time errors name it too. The outermost scope wins.
class UserOpScope {
public:
  explicit UserOpScope(const char *op) : prev_(slot()) {
    if (!prev_)
      slot() = op;
  }
  UserOpScope(const UserOpScope &) = delete;
  UserOpScope &operator=(const UserOpScope &) = delete;
  ~UserOpScope() { slot() = prev_; }
  /// The op of the outermost live scope on this thread, or nullptr.
  static const char *active() { return slot(); }

private:
  static const char *&slot() {
    static thread_local const char *op = nullptr;
    return op;
  }
  const char *prev_;
};

/// Base of every ptojit error. `what()` is `file:line: op: detail`; `op` is replaced by the
/// active UserOpScope's op, if any.
class Error : public std::runtime_error {
public:
  Error(std::string where, std::string op, std::string detail)
      : Error(std::move(where),
              UserOpScope::active() ? std::string(UserOpScope::active()) : std::move(op),
              std::move(detail), 0) {}
  Error(const std::source_location &loc, std::string op, std::string detail)
      : Error(format_location(loc), std::move(op), std::move(detail)) {}

  /// `file:line` of the user's call, or "<runtime>" for errors with no call site.
  const std::string &where() const { return where_; }
  /// The op as the user spelled it (`add`, `shmem_put`, `jit`).
  const std::string &op() const { return op_; }
  /// What was expected and what was given.
  const std::string &detail() const { return detail_; }

private:
  Error(std::string where, std::string op, std::string detail, int)
      : std::runtime_error(compose(where, op, detail)), where_(std::move(where)),
        op_(std::move(op)), detail_(std::move(detail)) {}
  static std::string compose(const std::string &where, const std::string &op,
                             const std::string &detail) {
    std::string s;
    if (!where.empty())
      s += where + ": ";
    if (!op.empty())
      s += op + ": ";
    return s + detail;
  }
  std::string where_, op_, detail_;
};

/// Shapes that do not broadcast, ranks or axes out of range, view windows outside their tensor.
class ShapeError : public Error {
  using Error::Error;
};
/// An op given a dtype it does not support, or operands of different dtypes.
class DTypeError : public Error {
  using Error::Error;
};
/// Tile shapes that are missing, non-positive, or of too small a rank (PyPTO §3.1 rules).
class TileShapeError : public Error {
  using Error::Error;
};
/// SymbolicScalar misuse: `concrete()` on a run-time value, division or modulo by a literal zero.
class SymbolicError : public Error {
  using Error::Error;
};
/// Distributed misuse: group names, n_pes mismatch, PE numbers or put/get offsets out of range.
class DistributedError : public Error {
  using Error::Error;
};
/// A wait that could not complete within the timeout; names PE, slot, expected and current value.
class DeadlockError : public DistributedError {
  using DistributedError::DistributedError;
};
/// Run-time arithmetic faults detected by generated code (integer division by zero, bad index).
class RuntimeError : public Error {
  using Error::Error;
};
/// Kernel call errors: wrong argument count, dtype or shape against the traced signature.
class ArgumentError : public Error {
  using Error::Error;
};
/// LLVM failed to build or compile a module; the message names the stage and the dump path.
class CompileError : public Error {
  using Error::Error;
};
/// A sharding strategy or layout that pto::parallel (pto/parallel.h) refuses at trace time: wrong
/// arity or rank, a split that does not map onto the mesh, a factor split differently in two
/// operands, a split of a dim that must stay whole; names the operand, the dim, what was given
/// and the nearest valid strategy.
class StrategyError : public Error {
  using Error::Error;
};
/// A ptojit bug, not a user error. The message names the stage; rerun with PTO_DUMP=ir.
class InternalError : public Error {
  using Error::Error;
};

} // namespace pto
