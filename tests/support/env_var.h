// env_var.h - Sets an environment variable for a scope (tests of the PTO_* variables), restoring
// its old value or its absence at the end of the scope, also when a check throws.
//
//   {
//     support::EnvVar mode("PTO_RUN_MODE", "interpreter");
//     support::expect_error<pto::ArgumentError>([&] { k(x, y); }, "my_test.cpp", line,
//                                               "PTO_RUN_MODE", "unknown value");
//   } // PTO_RUN_MODE is back as it was
#pragma once

#include <cstdlib>
#include <optional>
#include <stdlib.h>
#include <string>

namespace support {

/// Sets `name` to `value` (null: unsets it) until the end of the scope. Not thread-safe (the
/// environment is process-wide): use it on the test's own thread, with no other threads reading.
class EnvVar {
public:
  EnvVar(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  EnvVar(const EnvVar &) = delete;
  EnvVar &operator=(const EnvVar &) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

} // namespace support
