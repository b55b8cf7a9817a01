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
//
// A thread's lists (and its stash of shape vectors, below) hang off one
// thread_local pointer of initial-exec model and trivial type: an access is
// one %fs-relative load. The default model for a shared library, and the
// guard a thread_local with a destructor needs, called __tls_get_addr on
// every access (7% of a traced op's instructions). The cache is made on a
// thread's first use and freed at its exit by a separate reaper object.
// Initial-exec marks the engine library STATIC_TLS: its whole TLS block
// (~500 bytes) then comes from the space glibc reserves for libraries
// loaded by dlopen (~1.5 KiB by default; libgomp takes ~140 bytes of it):
// `import lazyscope` beside torch works in either order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace lazyscope::pool {

constexpr size_t kMaxBlocks = size_t{1} << 16;
constexpr size_t kSizeClasses = 64;  // blocks up to 1 KiB; larger ones come from ::operator new

constexpr size_t round_up(size_t size) { return (size + 15) / 16 * 16; }

struct FreeList {
  void* head = nullptr;
  size_t count = 0;
};

struct ThreadCache {
  // Small vectors (shapes) kept with their capacity after their owner died,
  // for the next owner: a traced op makes a node and a tensor, each with a
  // shape of its own, and their allocations and frees (two of each per op)
  // cost more than the rest of building them.
  static constexpr size_t kMaxShapes = 4096;
  static constexpr size_t kMaxShapeCapacity = 8;  // larger vectors go back to the heap

  bool dead = false;  // the sentinel of a thread whose cache is gone (thread exit)
  FreeList lists[kSizeClasses];
  std::vector<std::vector<int64_t>> shapes;

  ~ThreadCache() {
    for (FreeList& list : lists) {
      while (list.head) {
        void* next = *static_cast<void**>(list.head);
        ::operator delete(list.head);
        list.head = next;
      }
    }
  }
};

inline ThreadCache* dead_cache() {
  static ThreadCache* sentinel = [] {
    auto* c = new ThreadCache();  // never freed: threads exiting at any time may read it
    c->dead = true;
    return c;
  }();
  return sentinel;
}

[[gnu::tls_model("initial-exec")]] inline thread_local ThreadCache* t_cache = nullptr;

// Frees the thread's cache at its exit; later uses (destructors of other
// thread_locals) find the dead sentinel and use the heap.
struct Reaper {
  ~Reaper() {
    ThreadCache* c = t_cache;
    t_cache = dead_cache();
    if (c && !c->dead) delete c;
  }
};

[[gnu::noinline]] inline ThreadCache* make_thread_cache() {
  static thread_local Reaper reaper;  // constructed here, once per thread
  (void)reaper;
  t_cache = new ThreadCache();
  return t_cache;
}

inline ThreadCache* thread_cache() {
  ThreadCache* c = t_cache;
  return c ? c : make_thread_cache();
}

template <size_t Size> void* allocate() {
  constexpr size_t rounded = round_up(Size);
  if constexpr (rounded / 16 < kSizeClasses) {
    ThreadCache* c = thread_cache();
    FreeList& list = c->lists[rounded / 16];
    if (void* block = list.head) {
      list.head = *static_cast<void**>(block);
      --list.count;
      return block;
    }
  }
  return ::operator new(rounded);
}

template <size_t Size> void deallocate(void* block) noexcept {
  constexpr size_t rounded = round_up(Size);
  if constexpr (rounded / 16 < kSizeClasses) {
    ThreadCache* c = thread_cache();
    FreeList& list = c->lists[rounded / 16];
    if (!c->dead && list.count < kMaxBlocks) {
      *static_cast<void**>(block) = list.head;
      list.head = block;
      ++list.count;
      return;
    }
  }
  ::operator delete(block);
}

// Keeps `v`'s storage (leaving it empty) when the stash has room.
inline void stash_vector(std::vector<int64_t>& v) noexcept {
  if (v.capacity() == 0 || v.capacity() > ThreadCache::kMaxShapeCapacity) return;
  ThreadCache* c = thread_cache();
  if (c->dead || c->shapes.size() >= ThreadCache::kMaxShapes) return;
  try {
    c->shapes.push_back(std::move(v));
  } catch (...) {  // no room for the entry: `v` keeps its storage
  }
}

// Gives an empty `out` a stashed vector's storage, when there is one.
inline void unstash_vector(std::vector<int64_t>& out) noexcept {
  ThreadCache* c = thread_cache();
  if (c->dead || c->shapes.empty() || out.capacity() != 0) return;
  out.swap(c->shapes.back());
  c->shapes.pop_back();
  out.clear();
}

// `out` (empty) takes `in`'s dimensions in a stashed vector's storage: no
// allocation, and for the few dimensions of a shape no memmove call
// (assign() makes one: ~25 instructions of a replayed op's result).
[[gnu::always_inline]] inline void assign_stashed(std::vector<int64_t>& out, const std::vector<int64_t>& in) {
  unstash_vector(out);
  if (out.capacity() < in.size()) {
    out.assign(in.begin(), in.end());
    return;
  }
  for (const int64_t d : in) out.push_back(d);  // within capacity: no allocation
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
