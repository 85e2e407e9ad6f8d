// Turns a hung collective into an abort: armed around each exchange with a deadline; if the call
// has not returned by then, it prints what hung on which rank and ends the process with exit code 1.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace basp::validate {

class Watchdog {
 public:
  Watchdog(double timeout_s, int rank);  // timeout_s <= 0 disables it
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void arm(const std::string& what);
  void disarm();

 private:
  void watch();
  double timeout_s_;
  int rank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool armed_ = false, stop_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

}  // namespace basp::validate
