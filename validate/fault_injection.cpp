// Each fault reads its variable once per process; an unset or other rank's variable costs one
// getenv on the first exchange and nothing after.
#include "fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
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
  static const int slow = rank_named_by("BASP_VALIDATE_SLOW_RANK");
  static const double late_s = [] {  // after the colon of BASP_VALIDATE_SLOW_RANK
    const char* v = std::getenv("BASP_VALIDATE_SLOW_RANK");
    const char* colon = v ? std::strchr(v, ':') : nullptr;
    return colon ? std::atof(colon + 1) : 0.0;
  }();
  if (kill == world_rank) std::raise(SIGKILL);
  if (slow == world_rank && late_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(late_s));
  if (stall == world_rank)
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void corrupt_output_if_asked(int world_rank, std::vector<float>& y) {
  static const int corrupt = rank_named_by("BASP_VALIDATE_CORRUPT_RANK");
  if (corrupt == world_rank && !y.empty()) y[0] += 1.0f;
}

}  // namespace basp::validate
