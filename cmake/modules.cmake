# libkbpkg's modules (cmake/modules.txt): one OBJECT library per folder, and one layering check
# per module: a shared library of that module's objects linked with --no-undefined against the
# modules it may use, so a call the wrong way fails the build.
file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/modules.txt KB_MODULE_LINES REGEX "^[a-z/]+:")
# A module added to the table takes effect in the next incremental build, not only a fresh one.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/modules.txt)
set(KB_MODULES)
set(KB_LIB_OBJECTS)
foreach(line ${KB_MODULE_LINES})
  string(REGEX MATCH "^[a-z/]+" module "${line}")
  string(REGEX REPLACE "^[a-z/]+:[ ]*" "" deps "${line}")
  separate_arguments(deps)
  string(REPLACE "/" "_" id "${module}")
  list(APPEND KB_MODULES ${id})
  set(KB_MODULE_DIR_${id} ${module})
  set(KB_MODULE_DEPS_${id} ${deps})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${module}/*.c)
  if(KBPKG_PLANT_LAYERING_VIOLATION AND id STREQUAL "core")
    # tests/layering: a core file that calls the registry, which core may not use.
    list(APPEND srcs ${PROJECT_SOURCE_DIR}/tests/layering/planted_call.c)
  endif()
  add_library(kbmod_${id} OBJECT ${srcs})
  target_include_directories(kbmod_${id} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(kbmod_${id} PRIVATE KBPKG_BUILDING_LIBRARY
                             $<$<BOOL:${KBPKG_TESTS}>:KBPKG_TEST_HOOKS>)
  target_compile_options(kbmod_${id} PRIVATE ${KB_WARNINGS})
  set_target_properties(kbmod_${id} PROPERTIES POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden)
  target_link_libraries(kbmod_${id} PUBLIC ${KB_LIB_DEPS})
  list(APPEND KB_LIB_OBJECTS $<TARGET_OBJECTS:kbmod_${id}>)
endforeach()

if(KBPKG_CHECK_LAYERS)
  # Hidden symbols cannot cross a shared library, so each check links the static archives of
  # the modules it may use (and, through them, theirs: a module may use what its dependencies
  # use). The table itself lists a module's uses above it, so it holds no cycle.
  foreach(id ${KB_MODULES})
    set(dep_archives)
    foreach(dep ${KB_MODULE_DEPS_${id}})
      string(REPLACE "/" "_" dep_id "${dep}")
      if(NOT TARGET kblink_${dep_id})
        message(FATAL_ERROR "cmake/modules.txt: ${KB_MODULE_DIR_${id}} uses '${dep}', "
                            "which is not a module listed above it")
      endif()
      list(APPEND dep_archives kblink_${dep_id})
    endforeach()
    add_library(kblink_${id} STATIC $<TARGET_OBJECTS:kbmod_${id}>)
    target_link_libraries(kblink_${id} PUBLIC ${dep_archives} ${KB_LIB_DEPS})
    set_target_properties(kblink_${id} PROPERTIES ARCHIVE_OUTPUT_DIRECTORY
      ${PROJECT_BINARY_DIR}/layers)
    add_library(kblayer_${id} SHARED $<TARGET_OBJECTS:kbmod_${id}>)
    target_link_libraries(kblayer_${id} PRIVATE ${dep_archives} ${KB_LIB_DEPS})
    target_link_options(kblayer_${id} PRIVATE -Wl,--no-undefined)
    set_target_properties(kblayer_${id} PROPERTIES LIBRARY_OUTPUT_DIRECTORY
      ${PROJECT_BINARY_DIR}/layers)
  endforeach()
endif()
