// Gather and broadcast through pointers published between two barriers: the first makes every
// pointer visible, the second keeps the sources alive until the copies are done.
#include "control_threads.hpp"

#include <cstring>

namespace basp::validate {

void ThreadControl::gather(const void* mine, std::size_t bytes, void* all) {
  team_.slots[std::size_t(rank_)] = mine;
  barrier();
  if (rank_ == 0)
    for (int r = 0; r < team_.size; ++r)
      std::memcpy(static_cast<char*>(all) + std::size_t(r) * bytes, team_.slots[std::size_t(r)], bytes);
  barrier();
}

void ThreadControl::broadcast(void* data, std::size_t bytes) {
  if (rank_ == 0) team_.slots[0] = data;
  barrier();
  if (rank_ != 0) std::memcpy(data, team_.slots[0], bytes);
  barrier();
}

}  // namespace basp::validate
