# Install rules (included by the top-level CMakeLists.txt): the header, libtmanorm.so
# (versioned SONAME) and libtmanorm.a, the tmanorm command, the CMake package
# (find_package(tmanorm) -> tmanorm::tmanorm, tmanorm::tmanorm_static) and tmanorm.pc.
include(CMakePackageConfigHelpers)
set(tn_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tmanorm)

install(FILES ${PROJECT_SOURCE_DIR}/include/tmanorm.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tmanorm tmanorm_static EXPORT tmanormTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TMANORM_BUILD_CLI)
  install(TARGETS tmanorm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT tmanormTargets NAMESPACE tmanorm:: DESTINATION ${tn_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tmanormConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tmanormConfig.cmake INSTALL_DESTINATION ${tn_cmake_dir})
# The SONAME changes with the major version, so the package promises no more than that.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tmanormConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion) # as the SONAME, before 1.0
install(FILES ${PROJECT_BINARY_DIR}/tmanormConfig.cmake ${PROJECT_BINARY_DIR}/tmanormConfigVersion.cmake
        DESTINATION ${tn_cmake_dir})

# tmanorm.pc gets its prefix at install time, so it names the prefix installed to
# (cmake --install --prefix P), not the one configured: everything else is filled in
# now, @tn_pc_prefix@ is kept for the second pass. Libs.private holds what static
# linking needs; libcuda is never linked (dlopen'd at run time).
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(tn_pc_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(tn_pc_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(tn_pc_dest "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(tn_pc_dest "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
get_filename_component(tn_nvrtc_dir ${TN_NVRTC_LIBRARY} DIRECTORY)
set(tn_pc_libs_private "-L${tn_nvrtc_dir} -lnvrtc -lpthread")
foreach(lib ${CMAKE_DL_LIBS} m)
  string(APPEND tn_pc_libs_private " -l${lib}")
endforeach()
set(tn_pc_prefix "@tn_pc_prefix@")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tmanorm.pc.in ${PROJECT_BINARY_DIR}/tmanorm.pc.in @ONLY)
install(CODE "
  set(tn_pc_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/tmanorm.pc.in\" \"${PROJECT_BINARY_DIR}/tmanorm.pc\" @ONLY)
  file(INSTALL DESTINATION \"${tn_pc_dest}\" TYPE FILE FILES \"${PROJECT_BINARY_DIR}/tmanorm.pc\")")
