// dtype_codec.h - How ptojit's dtypes live in LLVM IR, in one place: the storage type of an
// element (what memory holds: fp16/bf16 as i16 bits, bool and uint8 as i8), the compute type (what
// arithmetic runs in: float for fp16/bf16), and the conversions between them and between dtypes.
// Every function is type-generic (Type::getWithNewType): a scalar in gives a scalar out, a <N x T>
// in a <N x U> out, so the fused vector passes, the scalar loops of the standalone ops and the
// matmul packing share it.
// The rules are the interpreter's (interp/interpreter_compute.cpp): fp16/bf16 round to nearest
// even once per stored element, NaN stays NaN, float -> int truncates and saturates (NaN -> 0).
#pragma once

#include "pto/dtype.h"

#include <llvm/IR/IRBuilder.h>

namespace pto::codegen {

/// True for the dtypes LLVM compares, extends and divides as unsigned: uint8 and bool.
bool is_unsigned(DataType dt);

/// The element type memory holds for `dt`: i16 for fp16/bf16/int16, float, double, i32, i64, and
/// i8 for int8, uint8 and bool.
llvm::Type *storage_type(llvm::IRBuilderBase &B, DataType dt);

/// The element type values of `dt` are computed in: float for fp16/bf16/fp32, else the storage
/// type (bool is an i8 0/1).
llvm::Type *compute_type(llvm::IRBuilderBase &B, DataType dt);

/// Storage bits -> compute value: fp16/bf16 bits become float (exact); other dtypes pass through.
llvm::Value *widen(llvm::IRBuilderBase &B, llvm::Value *raw, DataType dt);

/// Compute value -> storage bits: float to fp16/bf16 rounded to nearest even (NaN stays a quiet
/// NaN); other dtypes pass through.
llvm::Value *narrow(llvm::IRBuilderBase &B, llvm::Value *v, DataType dt);

/// A compute value rounded to what `dt` can hold (the fp16/bf16 round trip); others unchanged.
llvm::Value *round_to(llvm::IRBuilderBase &B, llvm::Value *v, DataType dt);

/// double -> float rounded to odd (exact, or truncated toward zero with the last bit set), so a
/// following round to fp16/bf16 equals rounding the double directly (one rounding).
llvm::Value *round_to_odd_f32(llvm::IRBuilderBase &B, llvm::Value *d);

/// int32/int64 -> float rounded to odd (as pto::int64_to_fp32_round_to_odd): exact below 2^24 in
/// magnitude, else the top 24 significant bits with the last set when bits were dropped, so a
/// following round to fp16/bf16 is the correctly rounded conversion (one rounding).
llvm::Value *int_to_f32_round_to_odd(llvm::IRBuilderBase &B, llvm::Value *x, bool is_signed);

/// A double rounded once to floating `dt`, as storage bits (double: unchanged; fp32: fptrunc;
/// fp16/bf16: round to odd on the way to float, then to nearest even, as the interpreter's
/// store_f).
llvm::Value *from_double(llvm::IRBuilderBase &B, llvm::Value *d, DataType dt);

/// Integer storage bits of `dt` -> i64 (or <N x i64>): zero-extended for uint8/bool, else
/// sign-extended.
llvm::Value *to_i64(llvm::IRBuilderBase &B, llvm::Value *raw, DataType dt);

/// A compute value of `from` -> the compute type of `to`, as pto::cast: to bool is "!= 0" (NaN
/// is true); float -> int truncates toward zero, saturating, NaN -> 0; double or a wide int ->
/// fp16/bf16 returns a float rounded to odd, which the caller's round_to/narrow rounds once more
/// (one rounding overall).
llvm::Value *convert(llvm::IRBuilderBase &B, llvm::Value *x, DataType from, DataType to);

} // namespace pto::codegen
