// The engine's large blocks: 2 MiB-aligned, huge pages where Linux offers them, and a cache of
// freed blocks so that the next engine reuses pages already faulted in instead of fresh ones.
#include "big_vector.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace basp {
namespace {

constexpr std::size_t huge = std::size_t(2) << 20;

// Why keep freed blocks: every fresh block's pages are zeroed by the kernel at first touch, and
// each simulation builds its engine anew (basp plan runs hundreds, simulate one per strategy and
// micro-step kind): on this project's VMs that zeroing was a quarter of one 16,384-GPU simulate's
// CPU time. A cached block is already faulted in. What it holds is freed memory the process keeps,
// so the cache is capped (1 GiB by default, far below basp plan's host memory budget).
// Sanitizer builds keep nothing, so that a use after free is still caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t default_cap = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr std::size_t default_cap = 0;
#else
constexpr std::size_t default_cap = std::size_t(1) << 30;
#endif
#else
constexpr std::size_t default_cap = std::size_t(1) << 30;
#endif

struct BlockCache {
  std::mutex lock;
  std::multimap<std::size_t, void*> blocks;      // kept: size -> block
  std::unordered_map<void*, std::size_t> sizes;  // in use: block -> its size (a kept one may be larger than asked)
  std::size_t held = 0, cap = default_cap;
};

// Never destroyed: a vector outliving static destruction may still free its block into it (what
// it keeps at exit goes back with the process).
BlockCache& cache() {
  static BlockCache* c = new BlockCache;
  return *c;
}

std::size_t rounded(std::size_t bytes) { return (bytes + huge - 1) / huge * huge; }

}  // namespace

void* allocate_big_block(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  BlockCache& c = cache();
  std::lock_guard<std::mutex> hold(c.lock);
  auto it = c.blocks.lower_bound(size);  // the smallest kept block that is large enough
  if (it != c.blocks.end()) {
    void* p = it->second;
    c.held -= it->first;
    c.sizes.emplace(p, it->first);
    c.blocks.erase(it);
    return p;
  }
  void* p = std::aligned_alloc(huge, size);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  ::madvise(p, size, MADV_HUGEPAGE);  // a hint: ignored where huge pages are off
#endif
  c.sizes.emplace(p, size);
  return p;
}

void free_big_block(void* p, std::size_t) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> hold(c.lock);
  const auto it = c.sizes.find(p);
  const std::size_t size = it->second;
  c.sizes.erase(it);
  if (c.held + size <= c.cap) {
    c.blocks.emplace(size, p);
    c.held += size;
  } else {
    std::free(p);
  }
}

std::size_t set_big_block_cache_bytes(std::size_t bytes) {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> hold(c.lock);
  const std::size_t before = c.cap;
  c.cap = bytes;
  while (c.held > c.cap && !c.blocks.empty()) {
    auto largest = std::prev(c.blocks.end());
    c.held -= largest->first;
    std::free(largest->second);
    c.blocks.erase(largest);
  }
  return before;
}

}  // namespace basp
