// Per-thread free lists of fixed-size blocks, for the objects a trace makes
// and drops by the thousand (IR nodes, tensors, autograd records).
//
// Why: a cached step of 1,000 ops makes ~1,000 nodes and tensors and frees
// them all at once at the barrier. glibc's per-thread cache keeps 7 blocks
// per size, so the rest went through its locked arena paths (_int_free,
// _int_malloc, malloc_consolidate: ~45% of the step, perf). Here a freed
// block goes on the freeing thread's list for its size class and the next
// allocation of that size on that thread takes it back: a pointer pop.
//
// Blocks are plain ::operator new memory, so a block allocated on one thread
// may be freed on another (a replica's tensors dropped by the loader thread):
// it simply joins that thread's list. Each list keeps at most kMaxBlocks;
// beyond that, and after the thread's lists are destroyed, blocks go back to
// ::operator delete. Use it through PoolAllocator with std::allocate_shared.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace lazyscope::pool {

constexpr size_t kMaxBlocks = size_t{1} << 16;

struct FreeList {
  void* head = nullptr;
  size_t count = 0;
  bool dead = false;  // set when the thread's lists are destroyed (thread exit)
  ~FreeList() {
    dead = true;
    while (head) {
      void* next = *static_cast<void**>(head);
      ::operator delete(head);
      head = next;
    }
    count = 0;
  }
};

// One list per thread and block size; sizes are rounded up to 16 bytes so
// that types of nearly equal size share a list.
template <size_t Size> FreeList& free_list() {
  static thread_local FreeList list;
  return list;
}

constexpr size_t round_up(size_t size) { return (size + 15) / 16 * 16; }

template <size_t Size> void* allocate() {
  FreeList& list = free_list<round_up(Size)>();
  if (void* block = list.head) {
    list.head = *static_cast<void**>(block);
    --list.count;
    return block;
  }
  return ::operator new(round_up(Size));
}

template <size_t Size> void deallocate(void* block) noexcept {
  FreeList& list = free_list<round_up(Size)>();
  if (list.dead || list.count >= kMaxBlocks) {
    ::operator delete(block);
    return;
  }
  *static_cast<void**>(block) = list.head;
  list.head = block;
  ++list.count;
}

// A std allocator over the free lists: single objects come from the pool,
// arrays from ::operator new.
template <typename T> struct PoolAllocator {
  using value_type = T;
  static_assert(alignof(T) <= alignof(std::max_align_t), "pooled blocks have the default alignment");
  PoolAllocator() = default;
  template <typename U> PoolAllocator(const PoolAllocator<U>&) noexcept {}  // NOLINT: allocators convert implicitly

  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(pool::allocate<sizeof(T)>());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1) {
      pool::deallocate<sizeof(T)>(p);
    } else {
      ::operator delete(p);
    }
  }
  template <typename U> bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

// std::make_shared with the object and its control block from the pool.
template <typename T, typename... Args> std::shared_ptr<T> make_pooled(Args&&... args) {
  return std::allocate_shared<T>(PoolAllocator<T>{}, std::forward<Args>(args)...);
}

}  // namespace lazyscope::pool
