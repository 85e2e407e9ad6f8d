// Runs numbered jobs on a few threads while the memory their estimates claim stays within a
// budget, giving idle threads small side work meanwhile (the planner's simulations and bounds).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace basp {

// Runs job(k, thread) for every k on `threads` threads, each job once the estimates of those
// running leave room for its own `need` within `budget` (or none runs): the first such job in
// order. A thread left with no job to start while others still run calls idle(thread), one
// small piece of work at a time, until it returns false or none runs. Rethrows the first error in
// k order once all have run (an error of `idle` at once).
void run_within_memory(int threads, const std::vector<double>& need, double budget,
                       const std::function<void(std::size_t, int)>& job,
                       const std::function<bool(int)>& idle = nullptr);

}  // namespace basp
