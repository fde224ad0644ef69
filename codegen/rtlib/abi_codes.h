// abi_codes.h - The ABI codes (pto/runtime/abi.h) of the IR's enums, as both executors pass them
// to the runtime: one mapping, so the interpreter and generated code cannot disagree.
#pragma once

#include "pto/ir/program.h"
#include "pto/runtime/abi.h"

#include <cstdint>

namespace pto::codegen {

/// pto_atomic of a put or signal's `atomic`.
inline int32_t abi_atomic(ir::Atomic a) {
  return a == ir::Atomic::Add ? PTO_ATOMIC_ADD : PTO_ATOMIC_SET;
}

static_assert(static_cast<int>(ir::Cmp::EQ) == PTO_CMP_EQ &&
                  static_cast<int>(ir::Cmp::NE) == PTO_CMP_NE &&
                  static_cast<int>(ir::Cmp::LT) == PTO_CMP_LT &&
                  static_cast<int>(ir::Cmp::LE) == PTO_CMP_LE &&
                  static_cast<int>(ir::Cmp::GT) == PTO_CMP_GT &&
                  static_cast<int>(ir::Cmp::GE) == PTO_CMP_GE,
              "ir::Cmp and pto_cmp must agree");
/// pto_cmp of a wait's comparison (the same ordinals).
inline int32_t abi_cmp(ir::Cmp c) { return static_cast<int32_t>(c); }

/// pto_amo of an AMO op kind (ShmemAtomicFetchAdd, ShmemAtomicSwap, ShmemAtomicCompareSwap).
inline int32_t abi_amo(ir::OpKind k) {
  return k == ir::OpKind::ShmemAtomicSwap          ? PTO_AMO_SWAP
         : k == ir::OpKind::ShmemAtomicCompareSwap ? PTO_AMO_COMPARE_SWAP
                                                   : PTO_AMO_FETCH_ADD;
}

/// pto_wait_set mode of a wait-set op kind (ShmemWaitUntil{All,Any,Some}; ShmemTest is ALL).
inline int32_t abi_wait_mode(ir::OpKind k) {
  return k == ir::OpKind::ShmemWaitUntilAny    ? PTO_WAIT_ANY
         : k == ir::OpKind::ShmemWaitUntilSome ? PTO_WAIT_SOME
                                               : PTO_WAIT_ALL;
}
/// Whether a wait-set op blocks (all but ShmemTest and the test forms of any/some, op.test).
inline int32_t abi_wait_blocks(const ir::Op &op) {
  return op.kind == ir::OpKind::ShmemTest || op.test ? 0 : 1;
}

} // namespace pto::codegen
