// Quantities with units: what people write in YAML and on the command line.
// Bits versus bytes is the classic trap: 400 Gb/s is 50 GB/s.
#include "units.hpp"

#include <catch2/catch.hpp>

using namespace basp;

TEST_CASE("quantities parse into SI base units") {
  CHECK(*parse_quantity("400 Gb/s", Quantity::bandwidth) == Approx(50e9));
  CHECK(*parse_quantity("450 GB/s", Quantity::bandwidth) == Approx(450e9));
  CHECK(*parse_quantity("64MiB", Quantity::bytes) == 67108864.0);
  CHECK(*parse_quantity("1.5 GB", Quantity::bytes) == Approx(1.5e9));
  CHECK(*parse_quantity("1048576", Quantity::bytes) == 1048576.0);
  CHECK(*parse_quantity("2us", Quantity::time) == Approx(2e-6));
  CHECK(*parse_quantity("5e-07 s", Quantity::time) == Approx(5e-7));
  CHECK(*parse_quantity("312 TFLOP/s", Quantity::rate) == Approx(312e12));
}

TEST_CASE("malformed quantities are refused - not defaulted") {
  CHECK_FALSE(parse_quantity("450 GBs", Quantity::bandwidth));
  CHECK_FALSE(parse_quantity("fast", Quantity::bandwidth));
  CHECK_FALSE(parse_quantity("10", Quantity::bandwidth));  // a bandwidth needs its unit
  CHECK_FALSE(parse_quantity("-1 us", Quantity::time));
  CHECK_FALSE(parse_quantity("2 us", Quantity::bytes));
  CHECK_FALSE(parse_quantity("1e300 GB", Quantity::bytes));  // overflows to infinity
}
