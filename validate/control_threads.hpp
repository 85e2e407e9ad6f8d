// Control for the single-process launcher: one thread per GPU rank, coordinated through a shared
// team (a barrier and exchange slots). No MPI anywhere, so it starts on nodes without MPI.
#pragma once

#include <barrier>
#include <vector>

#include "control.hpp"

namespace basp::validate {

struct ThreadTeam {
  explicit ThreadTeam(int n) : size(n), sync(n), slots(std::size_t(n), nullptr) {}
  int size;
  std::barrier<> sync;
  std::vector<const void*> slots;  // each rank's pointer, valid between two barriers
};

class ThreadControl final : public Control {
 public:
  ThreadControl(ThreadTeam& team, int rank) : team_(team), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return team_.size; }
  void barrier() override { team_.sync.arrive_and_wait(); }
  void gather(const void* mine, std::size_t bytes, void* all) override;
  void broadcast(void* data, std::size_t bytes) override;
  std::string launcher() const override { return "threads"; }

 private:
  ThreadTeam& team_;
  int rank_;
};

}  // namespace basp::validate
