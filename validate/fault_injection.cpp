// Each fault reads its variable once per process; an unset or other rank's variable costs one
// getenv on the first exchange and nothing after.
#include "fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace basp::validate {

namespace {
int rank_named_by(const char* variable) {
  const char* v = std::getenv(variable);
  return v && *v ? std::atoi(v) : -1;
}
}  // namespace

void exchange_faults(int world_rank) {
  static const int stall = rank_named_by("BASP_VALIDATE_STALL_RANK");
  static const int kill = rank_named_by("BASP_VALIDATE_KILL_RANK");
  if (kill == world_rank) std::raise(SIGKILL);
  if (stall == world_rank)
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void corrupt_output_if_asked(int world_rank, std::vector<float>& y) {
  static const int corrupt = rank_named_by("BASP_VALIDATE_CORRUPT_RANK");
  if (corrupt == world_rank && !y.empty()) y[0] += 1.0f;
}

}  // namespace basp::validate
