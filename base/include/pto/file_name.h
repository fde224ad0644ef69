// file_name.h - The escaping of a kernel name into one file-name component, shared by the stage
// dumps (codegen/passes/stage_dump.cpp writes NAME.HASH.EXT) and pto-dump (tools/pto_dump.cpp,
// which links nothing of ptojit and matches --kernel against the written names). Header-only.
#pragma once

#include <cstddef>
#include <string>

namespace pto {

/// The longest escaped kernel name in a dump file name, in bytes; longer names are cut (the
/// hash in the file name keeps cut names apart).
inline constexpr size_t kMaxDumpNameBytes = 128;

/// `name` as one file-name component: bytes outside [A-Za-z0-9_-] become %XX (upper-case hex),
/// so '/', '.', "..", spaces and non-UTF-8 bytes cannot leave the directory or hide the file.
/// Injective up to the cut: the result is at most kMaxDumpNameBytes long and never ends inside
/// an escape.
inline std::string escape_file_name(const std::string &name) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-';
    const size_t piece = plain ? 1 : 3;
    if (out.size() + piece > kMaxDumpNameBytes)
      break;
    if (plain) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

} // namespace pto
