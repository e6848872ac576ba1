# How Weir's targets are declared, and how the build enforces the direction of dependencies
# between modules (docs/architecture.md §1).
#
# A module is a folder under src/ (src/dataflow, src/connectors/nats); its headers are included
# by their path from src/ ("dataflow/graph.h"). Every target sees the public API (include/) and,
# through an include tree of its own in the build folder, only the modules it declares it uses:
# its own folder and the folders of its weir:: dependencies, transitively. A module that
# includes a header of a module it does not depend on fails to compile ("No such file"), which
# tests/layering checks.

# The include tree of `target`: build/include_trees/<target>/<module folder> -> src/<module
# folder>, one link per folder in `folders`.
function(weir_include_tree target)
  set(tree ${CMAKE_BINARY_DIR}/include_trees/${target})
  file(REMOVE_RECURSE ${tree})
  set(folders ${ARGN})
  list(REMOVE_DUPLICATES folders)
  foreach(folder IN LISTS folders)
    get_filename_component(parent ${tree}/${folder} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${folder} ${tree}/${folder} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE ${tree})
endfunction()

# The module folders `deps` make visible: each weir:: dependency's own (WEIR_MODULE_FOLDERS
# holds a target's folder and those of its dependencies).
function(weir_module_folders out)
  set(folders)
  foreach(dep IN LISTS ARGN)
    if(dep MATCHES "^weir::")
      get_target_property(dep_folders ${dep} WEIR_MODULE_FOLDERS)
      list(APPEND folders ${dep_folders})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES folders)
  set(${out} ${folders} PARENT_SCOPE)
endfunction()

# The current CMakeLists.txt's folder, relative to src/ ("connectors/nats").
function(weir_current_module out)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  set(${out} ${folder} PARENT_SCOPE)
endfunction()

# weir_cc_library(NAME name SRCS ... DEPS ...) makes the static library weir_<name> with the
# alias weir::<name>. Every weir:: dependency must already exist when a library is declared:
# modules are declared bottom-up (docs/architecture.md §1), so a dependency cycle fails
# configuration.
function(weir_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  foreach(dep IN LISTS ARG_DEPS)
    if(dep MATCHES "^weir::" AND NOT TARGET ${dep})
      message(FATAL_ERROR "weir::${ARG_NAME} depends on ${dep}, which is not declared yet: "
                          "modules depend downwards only (docs/architecture.md §1)")
    endif()
  endforeach()
  add_library(weir_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(weir::${ARG_NAME} ALIAS weir_${ARG_NAME})
  target_include_directories(weir_${ARG_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(weir_${ARG_NAME} PUBLIC ${ARG_DEPS})
  weir_current_module(own)
  weir_module_folders(folders ${ARG_DEPS})
  list(PREPEND folders ${own})
  list(REMOVE_DUPLICATES folders)
  set_property(TARGET weir_${ARG_NAME} PROPERTY WEIR_MODULE_FOLDERS ${folders})
  weir_include_tree(weir_${ARG_NAME} ${folders})
endfunction()

# weir_cc_binary(NAME name SRCS ... DEPS ...) makes a program of the project (the CLI, a
# benchmark): it sees its own folder and what it links.
function(weir_cc_binary)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  weir_current_module(own)
  weir_module_folders(folders ${ARG_DEPS})
  weir_include_tree(${ARG_NAME} ${own} ${folders})
endfunction()

# weir_cc_test(NAME name SRCS ... DEPS ... [LABELS ...] [TIMEOUT s]) makes a gtest binary and
# registers each of its tests with ctest. Tests see what they link, their own folder, and the
# shared test support in src/testing.
function(weir_cc_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  weir_module_folders(folders ${ARG_DEPS})
  if(CMAKE_CURRENT_SOURCE_DIR MATCHES "^${PROJECT_SOURCE_DIR}/src/")
    weir_current_module(own)
    list(APPEND folders ${own})
  endif()
  weir_include_tree(${ARG_NAME} ${folders} testing)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(properties TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()

# weir_fuzz_target(NAME name SRCS ... DEPS ... CORPUS dir [MUTATIONS n]) makes a fuzz target of
# the sources (which define LLVMFuzzerTestOneInput): always <name>_replay, a ctest that runs it over
# the corpus and n deterministic mutations of it (src/testing/fuzz_replay_main.cc), and with
# WEIR_FUZZ (clang) <name>, the libFuzzer target that `./dev fuzz` runs.
function(weir_fuzz_target)
  cmake_parse_arguments(ARG "" "NAME;CORPUS;MUTATIONS" "SRCS;DEPS" ${ARGN})
  weir_cc_binary(NAME ${ARG_NAME}_replay
                 SRCS ${ARG_SRCS} ${PROJECT_SOURCE_DIR}/src/testing/fuzz_replay_main.cc
                 DEPS ${ARG_DEPS})
  add_test(NAME ${ARG_NAME}_replay COMMAND ${ARG_NAME}_replay ${ARG_CORPUS} ${ARG_MUTATIONS})
  if(WEIR_FUZZ)
    weir_cc_binary(NAME ${ARG_NAME} SRCS ${ARG_SRCS} DEPS ${ARG_DEPS})
    target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer)
  endif()
endfunction()
