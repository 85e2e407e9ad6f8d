// A std::vector for the engine's large arrays (hundreds of MB at a million flows): blocks of
// 2 MiB or more are 2 MiB-aligned, marked for transparent huge pages, and kept for reuse once freed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace basp {

// Blocks of 2 MiB or more, freed by an engine and kept for the next (any thread's): a fresh
// block's pages are faulted in and zeroed by the kernel on first touch, which took a sixth of a
// planner's simulations; a kept block's pages are already there. At most `kept_limit` bytes are
// kept (2 GiB, or an eighth of the machine's memory if less), the largest let go first. Never
// destroyed, so that vectors freed at exit find it.
class HugeBlockPool {
 public:
  const std::size_t kept_limit;
  static HugeBlockPool& shared() {
    static HugeBlockPool* pool = new HugeBlockPool(default_limit());
    return *pool;
  }
  explicit HugeBlockPool(std::size_t limit_bytes) : kept_limit(limit_bytes) {}
  // A kept block of at least `bytes` and at most twice that, or null.
  void* take(std::size_t bytes) {
    std::lock_guard<std::mutex> hold(lock_);
    auto it = blocks_.lower_bound(bytes);
    if (it == blocks_.end() || it->first > 2 * bytes) return nullptr;
    void* p = it->second;
    kept_ -= it->first;
    if (it->first > bytes) larger_[p] = it->first;
    blocks_.erase(it);
    return p;
  }
  // `bytes`: what the block was asked for; a block taken for less is kept at its own size, so
  // that kept blocks do not shrink to the smallest request each served.
  void give(void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> hold(lock_);
    if (auto it = larger_.find(p); it != larger_.end()) {
      bytes = it->second;
      larger_.erase(it);
    }
    if (bytes > kept_limit) return std::free(p);
    while (kept_ + bytes > kept_limit) {
      auto last = std::prev(blocks_.end());
      kept_ -= last->first;
      std::free(last->second);
      blocks_.erase(last);
    }
    blocks_.emplace(bytes, p);
    kept_ += bytes;
  }

 private:
  static std::size_t default_limit() {
    std::size_t limit = std::size_t(2) << 30;
#if defined(__linux__)
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) limit = std::min(limit, std::size_t(pages) * std::size_t(page) / 8);
#endif
    return limit;
  }
  std::mutex lock_;
  std::multimap<std::size_t, void*> blocks_;  // by size
  std::unordered_map<void*, std::size_t> larger_;  // blocks lent for less than their size
  std::size_t kept_ = 0;
};

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
    if (void* kept = HugeBlockPool::shared().take(rounded)) return static_cast<T*>(kept);
    void* p = std::aligned_alloc(huge, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: ignored where huge pages are off
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge)
      ::operator delete(p);
    else
      HugeBlockPool::shared().give(p, (bytes + huge - 1) / huge * huge);
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
