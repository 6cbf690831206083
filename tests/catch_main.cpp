// Catch2 v2's implementation and main, compiled once (TOOLCHAIN.md §2).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
