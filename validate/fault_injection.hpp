// Faults injected on purpose, for the tests that measure how the validator detects them: a rank that
// hangs in, dies at or comes late to its exchanges, and a rank whose output is wrong. Never set otherwise.
#pragma once

#include <vector>

namespace basp::validate {

// BASP_VALIDATE_STALL_RANK=r: world rank r never joins its exchanges (a hung peer).
// BASP_VALIDATE_KILL_RANK=r: world rank r dies by SIGKILL as it enters its first exchange.
// BASP_VALIDATE_SLOW_RANK=r:SECONDS: world rank r sleeps that long before entering each exchange.
void exchange_faults(int world_rank);

// BASP_VALIDATE_CORRUPT_RANK=r: world rank r adds 1 to the first element of its output y before the
// check gathers it (a wrong element the check must attribute to r).
void corrupt_output_if_asked(int world_rank, std::vector<float>& y);

}  // namespace basp::validate
