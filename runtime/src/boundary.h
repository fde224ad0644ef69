// boundary.h - Keeps every exception that leaves the runtime a pto::Error. Host entry points
// (world.h, context.h) let a pto::Error through and wrap anything else (std::bad_alloc,
// std::system_error, a library's exception) into a RuntimeError at the user's line; C ABI entry
// points (abi.h) never throw into generated code: they record the exception in the PE's
// context, and end_call rethrows it through the host boundary.
#pragma once

#include "pto/error.h"

#include "world_state.h"

#include <exception>
#include <new>
#include <source_location>
#include <string>

namespace pto::runtime::detail {

/// Rethrows the exception being handled: unchanged if it is a pto::Error, else as a
/// RuntimeError "where: op: while <doing>: <what it said>". Call only inside a catch block.
[[noreturn]] inline void rethrow_as_pto_error(const std::string &where, const std::string &op,
                                              const std::string &doing) {
  try {
    throw;
  } catch (const Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    throw RuntimeError(where, op, "out of memory while " + doing);
  } catch (const std::exception &e) {
    throw RuntimeError(where, op, "while " + doing + ": " + e.what());
  } catch (...) {
    throw RuntimeError(where, op, "while " + doing + ": an unknown exception was thrown");
  }
}

/// Runs `body()` and returns its result; an exception leaves as rethrow_as_pto_error makes it.
/// `doing` says what the entry point was doing, for the message ("creating 8 PE contexts").
template <class F>
decltype(auto) host_boundary(const std::source_location &loc, const char *op,
                             const std::string &doing, F &&body) {
  try {
    return body();
  } catch (...) {
    rethrow_as_pto_error(format_location(loc), op, doing);
  }
}

/// Runs `body()` (returning a status) for a C ABI entry point: anything it throws is recorded in
/// ctx as a primary error (end_call makes it a pto::Error) and the status is PTO_ERR.
template <class F> int32_t abi_boundary(pto_ctx *ctx, F &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return record_error(ctx, std::current_exception(), /*released=*/false);
  }
}

} // namespace pto::runtime::detail
