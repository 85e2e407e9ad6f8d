// Control over MPI_COMM_WORLD, and the MPI process lifetime (MPI_Init / MPI_Finalize) that goes with it.
// Only the MPI-enabled runner includes this; the single-process GPU runner has no MPI at all.
#pragma once

#include <mpi.h>

#include "control.hpp"

namespace basp::validate {

class MpiControl final : public Control {
 public:
  MpiControl(int* argc, char*** argv);
  ~MpiControl() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  void gather(const void* mine, std::size_t bytes, void* all) override;
  void broadcast(void* data, std::size_t bytes) override;
  std::string launcher() const override { return "mpi"; }
  // The ranks of this rank's all-to-all group (color), ordered by world rank.
  MPI_Comm split(int color);
  int local_rank() const;  // among the ranks on this host: which GPU to take

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace basp::validate
