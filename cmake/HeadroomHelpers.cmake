# Helpers shared by every folder of Headroom.

# Finds the header-only dependencies: Debian's packages first, then HEADROOM_DEPS_INCLUDE
# (a copy of their headers, for the GPU machine that has no packages; TOOLCHAIN.md §11).
# Defines the imported targets headroom::json, headroom::cli11, headroom::expected,
# headroom::valijson and headroom::catch2.
function(headroom_find_header_deps)
  set(hint "${HEADROOM_DEPS_INCLUDE}")
  if(hint AND NOT IS_ABSOLUTE "${hint}")
    set(hint "${CMAKE_SOURCE_DIR}/${hint}")
  endif()
  foreach(dep IN ITEMS "json:nlohmann/json.hpp" "cli11:CLI/CLI.hpp" "expected:tl/expected.hpp"
                       "valijson:valijson/validator.hpp" "catch2:catch2/catch.hpp")
    string(REPLACE ":" ";" parts "${dep}")
    list(GET parts 0 name)
    list(GET parts 1 header)
    find_path(HEADROOM_${name}_INCLUDE_DIR "${header}" HINTS "${hint}" PATHS /usr/include)
    if(NOT HEADROOM_${name}_INCLUDE_DIR)
      message(FATAL_ERROR "Headroom needs ${header}: install the Debian package (README) or set HEADROOM_DEPS_INCLUDE")
    endif()
    add_library(headroom_dep_${name} INTERFACE IMPORTED GLOBAL)
    target_include_directories(headroom_dep_${name} SYSTEM INTERFACE "${HEADROOM_${name}_INCLUDE_DIR}")
    add_library(headroom::${name} ALIAS headroom_dep_${name})
  endforeach()
endfunction()

# Fails the configuration if <target> links anything whose name starts with one of the prefixes
# (STYLE.md: core, kernels, probes and the CLI never link Qt; core never links CUDA).
function(headroom_forbid_links target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(ilibs ${target} INTERFACE_LINK_LIBRARIES)
  foreach(lib IN LISTS libs ilibs)
    foreach(prefix IN LISTS ARGN)
      string(FIND "${lib}" "${prefix}" at)
      if(at EQUAL 0)
        message(FATAL_ERROR "${target} must not link ${lib} (dependency rule: no ${prefix})")
      endif()
    endforeach()
  endforeach()
endfunction()

# Common warnings for our own targets.
function(headroom_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
endfunction()
