# The library and the command must load on a machine without a CUDA driver:
# libcuda is only ever dlopen'd. Fails if any file names it as a load-time
# dependency (as CMake's CUDA::nvrtc target made clang and sanitizer builds do).
#   cmake -DFILES="a;b" -P check_no_driver.cmake
find_program(READELF readelf REQUIRED)
foreach(file ${FILES})
  execute_process(COMMAND ${READELF} -d ${file} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf -d ${file} failed")
  endif()
  string(REGEX MATCHALL "NEEDED[^\n]*" needed "${dyn}")
  foreach(line ${needed})
    if(line MATCHES "libcuda\\.so")
      message(FATAL_ERROR "${file} needs the CUDA driver at load time: ${line}")
    endif()
  endforeach()
  message(STATUS "${file}: no load-time dependency on libcuda")
endforeach()
