// `basp-validate comm`: the all-to-all over all N ranks versus B concurrent K-way groups, over a
// sweep of sizes, with nccl-tests' columns and an exact check of where every element landed.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "control.hpp"
#include "hardware.hpp"
#include "options.hpp"

namespace basp::validate {

// One communicator's all-to-all, as a backend provides it. Elements are fp32 so that the check
// values (integers below 2^24) are exact.
struct Exchange {
  virtual ~Exchange() = default;
  virtual int group_size() const = 0;
  virtual int group_rank() const = 0;
  // Fills the send buffer with check values, runs one all-to-all of `count` elements per peer and
  // returns the number of received elements that differ from what their sender must have put there.
  virtual long exchange_and_check(long count) = 0;
  // One timed all-to-all of `count` elements per peer (buffers already sized), in seconds.
  virtual double timed_exchange(long count) = 0;
};

// Value rank `src` sends to group rank `dst` at element `e`: exact in fp32, different for every
// (src, dst, e) within a window, so misplaced data is caught.
inline float check_value(int src, int dst, long e) {
  return float((long(src) * 7919 + long(dst) * 104729 + e * 13) % 16777213);
}

struct CommRow {
  std::string mode;  // global | grouped
  int group_size = 0, groups = 0;
  double bytes = 0;                           // per-rank send buffer
  long count = 0;                             // fp32 elements in it
  double min_s = 0, median_s = 0, max_s = 0;  // per iteration: the slowest rank
  std::vector<double> times_s;                // per iteration, slowest rank
  long wrong = 0;
};

// make_exchange(color, capacity elements per peer) gives this rank's Exchange over the ranks of `color`.
using MakeExchange = std::function<std::unique_ptr<Exchange>(int color, long max_count_per_peer)>;
int comm_command(const ValidateOptions& o, Control& ctl, Hardware hw, MakeExchange make_exchange);

}  // namespace basp::validate
