// A std::vector for the engine's large arrays (hundreds of MB at a million flows): blocks of
// 2 MiB or more are 2 MiB-aligned and marked for transparent huge pages where Linux offers them.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace basp {

// Blocks of 2 MiB or more: 2 MiB-aligned, marked for transparent huge pages, and kept for reuse
// once freed (big_vector.cpp says why and how much).
void* allocate_big_block(std::size_t bytes);
void free_big_block(void* p, std::size_t bytes);
// The most freed blocks kept at once, in bytes (0: none kept; what is kept beyond it is freed).
// Returns the limit it replaces.
std::size_t set_big_block_cache_bytes(std::size_t bytes);

// Why huge pages: with 4 KiB pages, first-touch page faults cost more than the simulation itself
// on virtual machines (measured: 178k faults, 1.3 s of 5.5 s for a 1024-GPU all-to-all).
template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t huge = std::size_t(2) << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(allocate_big_block(bytes));
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < huge)
      ::operator delete(p);
    else
      free_big_block(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

// Host memory the vectors hold (their capacities), for memory estimates and their checks.
template <class... Vectors>
std::size_t capacity_bytes(const Vectors&... v) {
  return (std::size_t{0} + ... + (v.capacity() * sizeof(typename Vectors::value_type)));
}

}  // namespace basp
