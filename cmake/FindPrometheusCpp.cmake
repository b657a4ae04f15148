# prometheus-cpp core, unpacked by scripts/setup from Debian's package (bookworm lacks one).
# Defines prometheus-cpp::core.
find_path(PrometheusCpp_INCLUDE_DIR prometheus/registry.h
          HINTS "${FRAUD_DEPS_PREFIX}/include")
find_library(PrometheusCpp_LIBRARY NAMES prometheus-cpp-core
             HINTS "${FRAUD_DEPS_PREFIX}/lib")
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PrometheusCpp
  REQUIRED_VARS PrometheusCpp_LIBRARY PrometheusCpp_INCLUDE_DIR
  FAIL_MESSAGE "prometheus-cpp not found: run scripts/setup")
if(PrometheusCpp_FOUND AND NOT TARGET prometheus-cpp::core)
  add_library(prometheus-cpp::core SHARED IMPORTED)
  set_target_properties(prometheus-cpp::core PROPERTIES
    IMPORTED_LOCATION "${PrometheusCpp_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PrometheusCpp_INCLUDE_DIR}")
endif()
