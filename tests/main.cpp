// Catch2's main for the whole test executable.
// Kept alone in its file so the test files compile independently.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
