// A budgeted job pool: threads take the first job whose estimate fits beside those running,
// sums of estimates kept in whole bytes so that the budget in use returns to 0 exactly.
#include "parallel_jobs.hpp"

#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace basp {

void run_within_memory(int threads, const std::vector<double>& need, double budget,
                       const std::function<void(std::size_t, int)>& job, const std::function<bool(int)>& idle) {
  const std::size_t count = need.size();
  std::vector<std::exception_ptr> errors(count);
  std::vector<bool> started(count, false);  // under the lock
  std::size_t waiting = count, running = 0;
  bool idle_done = !idle;
  std::exception_ptr idle_error;
  double in_use = 0;  // sums of the estimates: whole bytes, so it returns to 0 exactly
  std::mutex lock;
  std::condition_variable freed;
  auto work = [&](int t) {
    for (;;) {
      std::size_t k = count;
      {
        std::unique_lock<std::mutex> hold(lock);
        for (;;) {
          if (waiting == 0 && (running == 0 || idle_done)) return;
          if (waiting == 0) break;
          for (std::size_t j = 0; j < count && k == count; ++j)
            if (!started[j] && (in_use == 0 || in_use + std::ceil(need[j]) <= budget)) k = j;
          if (k < count) break;
          freed.wait(hold);
        }
        if (k < count) {
          started[k] = true;
          --waiting;
          ++running;
          in_use += std::ceil(need[k]);
        }
      }
      if (k == count) {  // every job has started, some still run: meanwhile, the idle work
        bool more = false;
        try {
          more = idle(t);
        } catch (...) {
          std::lock_guard<std::mutex> hold(lock);
          if (!idle_error) idle_error = std::current_exception();
        }
        if (!more) {
          std::lock_guard<std::mutex> hold(lock);
          idle_done = true;
        }
        continue;
      }
      try {
        job(k, t);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> hold(lock);
        in_use -= std::ceil(need[k]);
        --running;
      }
      freed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  const int spawned = idle ? threads : std::min<int>(threads, int(count));
  for (int t = 1; t < spawned; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  if (idle_error) std::rethrow_exception(idle_error);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace basp
