// run_check.cpp - See run_check.h.
#include "rtlib/run_check.h"

#include "pto/ir/program.h"

#include <string>
#include <vector>

extern "C" int32_t pto_rt_check_fail(pto_ctx *ctx, int32_t site, int32_t error_class,
                                     const char *message, const int64_t *args, int64_t n_args) {
  std::vector<std::string> shown;
  for (int64_t i = 0; i < n_args; ++i)
    shown.push_back(std::to_string(args[i]));
  const std::string detail = pto::ir::format_check(message ? message : "", shown);
  return pto_rt_fail_msg(ctx, error_class, site, detail.c_str());
}
