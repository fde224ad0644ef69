// run_check.h - The failure path of Check ops (ir::OpKind::Check, dsl/src/shape_rules.h), shared
// by generated code (called through the JIT's symbol table) and the reference interpreter, so a
// run-time requirement fails with the same error type and text in both executors.
#pragma once

#include "pto/runtime/abi.h"

#include <cstdint>

/// Records the error of `error_class` (a pto_error_class: check_error_class of the Check op)
/// for call site `site` whose detail is `message` with each `{}` replaced by the next of
/// `args[0 .. n_args)` in decimal (ir::format_check: the text the trace-time error of the same
/// requirement has). Always returns PTO_ERR.
extern "C" int32_t pto_rt_check_fail(pto_ctx *ctx, int32_t site, int32_t error_class,
                                     const char *message, const int64_t *args, int64_t n_args);
