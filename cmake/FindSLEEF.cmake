# FindSLEEF.cmake - SLEEF, the vectorized math library the JIT-compiled code calls (Debian
# libsleef-dev ships no CMake package). Defines SLEEF::SLEEF (imported) and the cache variables
# SLEEF_LIB and SLEEF_INCLUDE. Used by ptojit's build and by its installed ptojitConfig.cmake.
find_library(SLEEF_LIB sleef)
find_path(SLEEF_INCLUDE sleef.h PATH_SUFFIXES x86_64-linux-gnu)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SLEEF REQUIRED_VARS SLEEF_LIB SLEEF_INCLUDE)
if(SLEEF_FOUND AND NOT TARGET SLEEF::SLEEF)
  add_library(SLEEF::SLEEF UNKNOWN IMPORTED)
  set_target_properties(SLEEF::SLEEF PROPERTIES IMPORTED_LOCATION "${SLEEF_LIB}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${SLEEF_INCLUDE}")
endif()
