# weir_cc_library(NAME name SRCS ... DEPS ...) makes the static library weir_<name> with the
# alias weir::<name>. Every weir:: dependency must already exist when a library is declared:
# modules are declared bottom-up (DESIGN.md §1), so a dependency cycle fails configuration.
function(weir_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  foreach(dep IN LISTS ARG_DEPS ARG_PUBLIC_DEPS)
    if(dep MATCHES "^weir::" AND NOT TARGET ${dep})
      message(FATAL_ERROR "weir::${ARG_NAME} depends on ${dep}, which is not declared yet: "
                          "modules depend downwards only (DESIGN.md §1)")
    endif()
  endforeach()
  add_library(weir_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(weir::${ARG_NAME} ALIAS weir_${ARG_NAME})
  target_include_directories(weir_${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                                     ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(weir_${ARG_NAME} PUBLIC ${ARG_PUBLIC_DEPS} ${ARG_DEPS})
endfunction()

# weir_cc_test(NAME name SRCS ... DEPS ... [LABELS ...] [TIMEOUT s]) makes a gtest binary and
# registers each of its tests with ctest.
function(weir_cc_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(properties TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
endfunction()
