# libFuzzer targets (KBPKG_FUZZ=ON, clang only): the library's sources built again with
# coverage instrumentation and ASan+UBSan, one executable per tests/fuzz/fuzz_*.c.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KBPKG_FUZZ needs clang (libFuzzer): configure with CC=clang")
endif()

set(KB_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer -g)
set(KB_FUZZ_LINK -fsanitize=fuzzer,address,undefined)

# Its own instrumented copy of the library, so the ordinary targets stay as they are: the
# sources of every module (cmake/modules.cmake), the generated ones included.
set(KB_FUZZ_LIB_SOURCES)
foreach(id ${KB_MODULES})
  get_target_property(srcs kbmod_${id} SOURCES)
  list(APPEND KB_FUZZ_LIB_SOURCES ${srcs})
endforeach()
add_library(kbpkg_fuzz_lib STATIC ${KB_FUZZ_LIB_SOURCES})
target_include_directories(kbpkg_fuzz_lib PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})
target_compile_definitions(kbpkg_fuzz_lib PRIVATE KBPKG_BUILDING_LIBRARY)
target_compile_options(kbpkg_fuzz_lib PRIVATE ${KB_WARNINGS} ${KB_FUZZ_FLAGS})
target_link_libraries(kbpkg_fuzz_lib PUBLIC ${KB_LIB_DEPS})

file(GLOB KB_FUZZ_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
set(KB_FUZZ_TARGETS)
foreach(src ${KB_FUZZ_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${KB_WARNINGS} ${KB_FUZZ_FLAGS})
  target_link_options(${name} PRIVATE ${KB_FUZZ_LINK})
  target_link_libraries(${name} PRIVATE kbpkg_fuzz_lib)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
  list(APPEND KB_FUZZ_TARGETS ${name})
endforeach()
add_custom_target(fuzzers DEPENDS ${KB_FUZZ_TARGETS})

# ~10 s per target on a copy of its seed corpus: a crash, leak or UB fails the test.
enable_testing()
add_test(NAME fuzz/smoke COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fuzz-smoke.sh
         --no-build ${PROJECT_BINARY_DIR})
set_tests_properties(fuzz/smoke PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
