# Registers every Catch2 test case of an executable with CTest, one CTest test per case.
# Uses Catch's own catch_discover_tests when Catch2's CMake package is installed, else one
# test for the whole binary (the GPU machine has only the header; TOOLCHAIN.md §11).
find_package(Catch2 2.13 QUIET)
if(Catch2_FOUND)
  include(Catch)
endif()

function(headroom_discover_tests target)
  if(COMMAND catch_discover_tests)
    catch_discover_tests(${target} ${ARGN})
  else()
    add_test(NAME ${target} COMMAND ${target})
  endif()
endfunction()
