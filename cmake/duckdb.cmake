# DuckDB::duckdb: the prebuilt libduckdb.so and duckdb.h that `./dev deps` puts in
# third_party/duckdb/ (DuckDB is not packaged by Debian; see shared/DEPENDENCIES.md). Only the C
# API is used: the C++ API has no stable ABI across builds. The library is linked with an rpath
# to that folder, so binaries run from the build tree without LD_LIBRARY_PATH.
set(WEIR_DUCKDB_DIR "${PROJECT_SOURCE_DIR}/third_party/duckdb"
    CACHE PATH "Folder holding lib/libduckdb.so and include/duckdb.h")
if(NOT EXISTS "${WEIR_DUCKDB_DIR}/lib/libduckdb.so" OR
   NOT EXISTS "${WEIR_DUCKDB_DIR}/include/duckdb.h")
  message(FATAL_ERROR "DuckDB not found in ${WEIR_DUCKDB_DIR} (lib/libduckdb.so and "
                      "include/duckdb.h): run `./dev deps` to fetch it")
endif()
add_library(DuckDB::duckdb SHARED IMPORTED GLOBAL)
set_target_properties(DuckDB::duckdb PROPERTIES
  IMPORTED_LOCATION "${WEIR_DUCKDB_DIR}/lib/libduckdb.so"
  INTERFACE_INCLUDE_DIRECTORIES "${WEIR_DUCKDB_DIR}/include")
