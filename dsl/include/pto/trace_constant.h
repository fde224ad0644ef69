// trace_constant.h - How a non-tensor kernel argument becomes a trace-time constant that keys
// the compile cache (issue 13, item 3). PyPTO passes any Python value (an int, a string, a
// tuple, a list, a DataType, a config object) to a jit kernel as a constant of the trace; the
// C++ mirror accepts:
//   - arithmetic values and strings (as before);
//   - enums, pto::DataType included (keyed by type and value);
//   - std::pair, std::tuple, std::array, std::vector and std::optional of accepted values;
//   - a config struct: any class type with a function `pto_trace_key(const T &)` returning
//     std::string, found by argument-dependent lookup (declare it next to the struct), or a member
//     `std::string pto_trace_key() const`. The key must change whenever a field the kernel reads
//     changes: two calls whose keys are equal reuse one compiled program.
// Anything else (a pointer, a class without a key) is a compile-time error naming this header.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace pto::detail {

template <class T> struct IsPair : std::false_type {};
template <class A, class B> struct IsPair<std::pair<A, B>> : std::true_type {};
template <class T> struct IsTuple : std::false_type {};
template <class... A> struct IsTuple<std::tuple<A...>> : std::true_type {};
template <class T> struct IsStdArray : std::false_type {};
template <class A, size_t N> struct IsStdArray<std::array<A, N>> : std::true_type {};
template <class T> struct IsVector : std::false_type {};
template <class A, class Al> struct IsVector<std::vector<A, Al>> : std::true_type {};
template <class T> struct IsOptional : std::false_type {};
template <class A> struct IsOptional<std::optional<A>> : std::true_type {};

template <class T>
concept HasAdlTraceKey = requires(const T &v) {
  { pto_trace_key(v) } -> std::convertible_to<std::string>;
};
template <class T>
concept HasMemberTraceKey = requires(const T &v) {
  { v.pto_trace_key() } -> std::convertible_to<std::string>;
};

template <class T> inline constexpr bool dependent_false_v = false;

/// The cache-key text of one non-tensor kernel argument (see the top of this file).
template <class T> std::string constant_repr(const T &v) {
  using U = std::remove_cvref_t<T>;
  std::ostringstream os;
  if constexpr (std::is_same_v<U, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_arithmetic_v<U>) {
    os.precision(17);
    os << +v;
  } else if constexpr (std::is_enum_v<U>) {
    os << typeid(U).name() << ':' << static_cast<long long>(v);
  } else if constexpr (std::is_pointer_v<U> || std::is_member_pointer_v<U>) {
    static_assert(dependent_false_v<U>,
                  "pto::jit: a pointer cannot be a kernel constant (pto/trace_constant.h)");
  } else if constexpr (std::is_convertible_v<const U &, std::string>) {
    os << '"' << std::string(v) << '"';
  } else if constexpr (IsPair<U>::value) {
    os << '(' << constant_repr(v.first) << ", " << constant_repr(v.second) << ')';
  } else if constexpr (IsTuple<U>::value) {
    os << '(';
    std::apply(
        [&os](const auto &...e) {
          size_t i = 0;
          ((os << (i++ ? ", " : "") << constant_repr(e)), ...);
        },
        v);
    os << ')';
  } else if constexpr (IsStdArray<U>::value || IsVector<U>::value) {
    os << '[';
    size_t i = 0;
    for (const auto &e : v)
      os << (i++ ? ", " : "") << constant_repr(e);
    os << ']';
  } else if constexpr (IsOptional<U>::value) {
    if (v)
      os << "some(" << constant_repr(*v) << ')';
    else
      os << "none";
  } else if constexpr (HasAdlTraceKey<U>) {
    os << typeid(U).name() << '{' << std::string(pto_trace_key(v)) << '}';
  } else if constexpr (HasMemberTraceKey<U>) {
    os << typeid(U).name() << '{' << std::string(v.pto_trace_key()) << '}';
  } else {
    static_assert(dependent_false_v<U>,
                  "pto::jit: a non-tensor kernel argument must be arithmetic, a string, an enum, a "
                  "pair/tuple/array/vector/optional of those, or a class with pto_trace_key "
                  "(pto/trace_constant.h)");
  }
  return os.str();
}

} // namespace pto::detail
