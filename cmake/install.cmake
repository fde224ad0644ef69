# install.cmake - `cmake --install BUILD --prefix P` (PTO_INSTALL, on when ptojit is the top-level
# project): the user API's headers (base/, dsl/, codegen/ and runtime/include; never the IR's
# dsl/internal nor a layer's own headers), the static libraries, the CMake package
# (find_package(ptojit CONFIG) -> ptojit::pto, with its version file), ptojit.pc for pkg-config,
# and pto-dump when it is built. README.md, "Using ptojit from your own project", shows both uses.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every static library pto links (directly or through another), in link order, plus the
# INTERFACE targets that tie them together. pto_dsl_internal is exported only because pto_passes
# links it; installed, it carries no include directory.
set(PTO_INSTALLED_LIBS pto_driver pto_llvm pto_interp pto_rtlib pto_passes pto_dsl pto_runtime
                       pto_base)
install(TARGETS ${PTO_INSTALLED_LIBS} pto_dsl_internal pto_jit_api pto_codegen pto_core pto
        EXPORT ptojitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir base/include dsl/include codegen/include runtime/include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(pto_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ptojit)
install(EXPORT ptojitTargets NAMESPACE ptojit:: DESTINATION ${pto_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ptojitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ptojitConfig.cmake
                              INSTALL_DESTINATION ${pto_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ptojitConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ptojitConfig.cmake ${PROJECT_BINARY_DIR}/ptojitConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindSLEEF.cmake
        DESTINATION ${pto_cmake_dir})

# ptojit.pc: relocatable (the prefix is found from the file's own place, ${pcfiledir}).
file(RELATIVE_PATH pto_pc_up /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" pto_pc_up "${pto_pc_up}")
set(PTO_PC_PREFIX "\${pcfiledir}/${pto_pc_up}")
list(TRANSFORM PTO_INSTALLED_LIBS PREPEND -l OUTPUT_VARIABLE PTO_PC_LIBS)
list(JOIN PTO_PC_LIBS " " PTO_PC_LIBS)
set(PTO_PC_REQUIRES_MPI "")
set(PTO_PC_CFLAGS_MPI "")
if(PTO_WITH_MPI)
  set(PTO_PC_REQUIRES_MPI " ompi-c")
  set(PTO_PC_CFLAGS_MPI " -DPTO_HAVE_MPI=1")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ptojit.pc.in ${PROJECT_BINARY_DIR}/ptojit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ptojit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET pto-dump)
  install(TARGETS pto-dump RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
