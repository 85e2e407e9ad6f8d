// A std::vector for the engine's large arrays (hundreds of MB at a million flows): blocks of
// 2 MiB or more are 2 MiB-aligned and marked for transparent huge pages where Linux offers them.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace basp {

// Why: with 4 KiB pages, first-touch page faults cost more than the simulation itself on
// virtual machines (measured: 178k faults, 1.3 s of 5.5 s for a 1024-GPU all-to-all).
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
    const std::size_t rounded = (bytes + huge - 1) / huge * huge;
    void* p = std::aligned_alloc(huge, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: ignored where huge pages are off
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < huge)
      ::operator delete(p);
    else
      std::free(p);
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
