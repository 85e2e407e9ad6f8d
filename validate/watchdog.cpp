// A thread sleeping until the armed deadline. It never calls MPI or NCCL (they may be the ones
// hung); it writes to stderr and _Exit()s, and the launcher (mpirun) then stops the other ranks.
#include "watchdog.hpp"

#include <cstdio>
#include <cstdlib>

namespace basp::validate {

Watchdog::Watchdog(double timeout_s, int rank) : timeout_s_(timeout_s), rank_(rank) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::arm(const std::string& what) {
  if (timeout_s_ <= 0) return;
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    what_ = what;
    deadline_ =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(timeout_s_));
  }
  wake_.notify_all();
}

void Watchdog::disarm() {
  if (timeout_s_ <= 0) return;
  std::lock_guard lock(mutex_);
  armed_ = false;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      wake_.wait(lock);
      continue;
    }
    if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      std::fprintf(stderr,
                   "basp-validate: rank %d: %s did not complete within %g s (--timeout): a peer is "
                   "missing, hung or far slower; aborting\n",
                   rank_, what_.c_str(), timeout_s_);
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
}

}  // namespace basp::validate
