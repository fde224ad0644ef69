// user_api_check.cpp - Compiled (never run) with only what a user gets from pto::pto: the public
// headers give the whole user API and no IR. A build error here means an internal header leaked
// into the user's include path or into a public header (docs/architecture.md, section 2).
#include "pto/pto.h"
#include "pto/runtime/world.h"

#if __has_include("pto/ir/program.h") || __has_include("passes/pipeline.h")
#error "an internal include root is on the user's include path"
#endif

namespace {
template <class T> constexpr bool complete = requires { sizeof(T); };
// The public headers forward-declare the program (pto/value.h) and never define it.
static_assert(!complete<pto::ir::Program>, "a public header includes the IR (pto/ir/program.h)");
} // namespace

// A kernel in the user's words, so that the API is used, not only declared.
void user_api_check_kernel(pto::Tensor x, pto::Tensor y) {
  pto::assemble(pto::softmax(x, -1), {0, 0}, y);
}
