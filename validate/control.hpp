// The ranks' out-of-band coordination: barriers, gathering results to rank 0, broadcasting setup.
// MPI processes (mpirun / srun) or threads of one process (one per local GPU, no MPI needed).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace basp::validate {

class Control {
 public:
  virtual ~Control() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  // Rank 0 receives every rank's `bytes` bytes in rank order into `all`; other ranks pass nullptr.
  virtual void gather(const void* mine, std::size_t bytes, void* all) = 0;
  // Rank 0's `bytes` bytes at `data` reach every rank.
  virtual void broadcast(void* data, std::size_t bytes) = 0;
  virtual std::string launcher() const = 0;  // "mpi" or "threads"

  template <class T>
  std::vector<T> gather_vector(const std::vector<T>& mine) {
    std::vector<T> all(rank() == 0 ? mine.size() * size() : 0);
    gather(mine.data(), mine.size() * sizeof(T), rank() == 0 ? all.data() : nullptr);
    return all;
  }
};

}  // namespace basp::validate
