// A probe of the build's layering (cmake/WeirTargets.cmake): compiled by tests/CMakeLists.txt in
// the include context of one module, with WEIR_PROBE_HEADER naming the header it tries to use.
#include WEIR_PROBE_HEADER
