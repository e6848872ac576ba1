# The installed package: `cmake --install` puts the public headers (include/weir/), the static
# libraries of the public API, a CMake package (find_package(Weir) -> weir::weir) and weir.pc in
# place. A program links weir::weir (or `pkg-config --libs weir`) and nothing else of ours;
# examples/ is built against it by the test Install.ExamplesBuildAgainstPackage.
#
# weir::weir is an interface target over the libraries the public headers need: the application
# (weir::app), the JetStream connector that defines Application::FromJetStream (weir::nats) and
# the WebSocket client behind weir::Subscription (weir::client), with what they use. DuckDB is
# not among them (only the Nexmark reference of the benchmarks uses weir::sql), so the package
# neither installs nor looks for it.
include(CMakePackageConfigHelpers)

# The installed libraries, each before the ones it uses: the order weir.pc links them in.
set(WEIR_PACKAGE_LIBRARIES app process nats client dataflow state window join log stream_protocol core)

add_library(weir_weir INTERFACE)
add_library(weir::weir ALIAS weir_weir)
set_target_properties(weir_weir PROPERTIES EXPORT_NAME weir)
target_link_libraries(weir_weir INTERFACE weir::app weir::process weir::nats weir::client)
target_compile_features(weir_weir INTERFACE cxx_std_20)
# A sanitizer build's libraries need the sanitizer's runtime in every program that links them.
target_link_options(weir_weir INTERFACE ${WEIR_SANITIZER_LINK_OPTIONS})

set(package_targets weir_weir)
foreach(library IN LISTS WEIR_PACKAGE_LIBRARIES)
  set_target_properties(weir_${library} PROPERTIES EXPORT_NAME ${library})
  list(APPEND package_targets weir_${library})
endforeach()
install(TARGETS ${package_targets} EXPORT WeirTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/weir DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Weir)
install(EXPORT WeirTargets NAMESPACE weir:: DESTINATION ${config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/WeirConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/WeirConfig.cmake INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/WeirConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/WeirConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/WeirConfigVersion.cmake
        DESTINATION ${config_dir})

# weir.pc finds the prefix from its own place, so that `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH WEIR_PC_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
list(TRANSFORM WEIR_PACKAGE_LIBRARIES PREPEND "-lweir_" OUTPUT_VARIABLE WEIR_PC_LIBS)
list(APPEND WEIR_PC_LIBS ${WEIR_SANITIZER_LINK_OPTIONS})
list(JOIN WEIR_PC_LIBS " " WEIR_PC_LIBS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/weir.pc.in ${CMAKE_CURRENT_BINARY_DIR}/weir.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/weir.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
