# Sanitizer and fuzzing builds. Included by the top-level CMakeLists.txt before
# any target, so the flags reach the library objects, the tools and the tests.
#   -DTN_SANITIZE=address,undefined   ASan + UBSan (gcc or clang): make sanitize
#   -DTN_SANITIZE=thread              ThreadSanitizer: make tsan
#   -DTN_FUZZ=ON                      libFuzzer targets of tests/fuzz (clang only;
#                                     address,undefined unless TN_SANITIZE says else): make fuzz
# Errors are fatal (no recovery), so a report fails the test that caused it.
set(TN_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined or thread (empty: none)")
option(TN_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang)" OFF)

if(TN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TN_FUZZ needs clang as the C compiler (-DCMAKE_C_COMPILER=clang), not ${CMAKE_C_COMPILER_ID}")
  endif()
  if(NOT TN_SANITIZE)
    set(TN_SANITIZE address,undefined CACHE STRING "" FORCE)
  endif()
  # Coverage feedback for libFuzzer in every object; only the fuzz binaries link its main().
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(TN_SANITIZE)
  if(TN_SANITIZE MATCHES "thread" AND TN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "TN_SANITIZE: thread and address cannot be combined; build them in two trees")
  endif()
  set(tn_sanitize ${TN_SANITIZE})
  if(TN_SANITIZE MATCHES "undefined" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
    # Part of clang's "undefined", not gcc's: a float to integer conversion out of range.
    string(APPEND tn_sanitize ",float-cast-overflow")
  endif()
  add_compile_options(-fsanitize=${tn_sanitize} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${tn_sanitize})
  message(STATUS "tmanorm: sanitizers ${tn_sanitize} (${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION})")
endif()
