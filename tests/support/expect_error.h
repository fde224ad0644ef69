// expect_error.h - Checks that a call throws exactly one pto::Error subclass whose message starts
// with the test's `file:line: op:` and contains a given detail (expect_error), or returns the
// message of exactly that type for a check of its own (thrown).
//
//   int line = 0;
//   auto k = [&](pto::Tensor x) {
//     line = __LINE__ + 1; // the line of the op call, known once the kernel is traced
//     pto::tile(x, {int64_t{1} << 62, 1});
//   };
//   support::expect_error<pto::ShapeError>([&] { run(k); }, "my_test.cpp", line, "tile",
//   "exceeds");
#pragma once

#include "pto/error.h"

#include <doctest/doctest.h>

#include <exception>
#include <string>
#include <typeinfo>
#include <utility>

namespace support {

/// Runs `call` and CHECKs that it throws an E, of exactly that type (not a subclass); returns
/// its what() ("" when it threw nothing or something else, which fails the test). For checks of
/// the whole message; expect_error checks the usual parts.
template <class E, class F> std::string thrown(F &&call) {
  try {
    call();
  } catch (const E &e) {
    CHECK_MESSAGE(typeid(e) == typeid(E), "threw a subclass: " << std::string(e.what()));
    return e.what();
  } catch (const std::exception &e) {
    FAIL_CHECK("threw " << std::string(typeid(e).name()) << " instead of "
                        << std::string(typeid(E).name()) << ": " << std::string(e.what()));
    return "";
  }
  FAIL_CHECK("threw nothing; expected " << typeid(E).name());
  return "";
}

/// Runs `call` and CHECKs that it throws an E, of exactly that type (not a subclass), whose
/// what() contains "`file`:`line`: `op`: " and `detail`. `line` is read after the call (the call
/// may set it). Returns the message ("" when it threw nothing or something else, which fails the
/// test).
template <class E, class F>
std::string expect_error(F &&call, const std::string &file, const int &line, const std::string &op,
                         const std::string &detail = "") {
  const std::string msg = thrown<E>(std::forward<F>(call));
  if (msg.empty())
    return msg; // the failure is recorded
  CAPTURE(msg);
  CHECK(msg.find(file + ":" + std::to_string(line) + ": " + op + ": ") != std::string::npos);
  CHECK(msg.find(detail) != std::string::npos);
  return msg;
}

} // namespace support
