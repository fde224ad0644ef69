// doctest_main.cpp - The doctest entry point shared by every test executable. A test binary never
// reads or writes the user's own on-disk kernel cache: unless PTO_CACHE_DIR is set (CTest and
// scripts/test.sh set it to build/ptojit-cache), it points at a fresh temporary directory,
// removed at exit.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

int main(int argc, char **argv) {
  std::string dir;
  const char *set = std::getenv("PTO_CACHE_DIR");
  if (!set || !*set) {
    std::error_code ec;
    auto tmp = std::filesystem::temp_directory_path(ec);
    std::string tmpl = (ec ? std::filesystem::path("/tmp") : tmp) / "ptojit-test-cache.XXXXXX";
    if (::mkdtemp(tmpl.data())) {
      dir = tmpl;
      ::setenv("PTO_CACHE_DIR", dir.c_str(), 1);
    } else {
      ::setenv("PTO_CACHE", "0", 1);
    }
  }
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return rc;
}
