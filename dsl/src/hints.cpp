// hints.cpp - PyPTO's compiler hints, accepted (pto/hints.h).
#include "pto/hints.h"

#include "pto/error.h"

namespace pto {

void set_pass_options(const PassOptions &opts, std::source_location loc) {
  for (const auto &[key, value] : opts)
    if (key.empty())
      throw ArgumentError(loc, "set_pass_options", "an option name is empty");
}

} // namespace pto
