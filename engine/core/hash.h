// 64-bit hashing for IR nodes and graphs: FNV-1a over bytes, and a combine
// step with good avalanche (from splitmix64) so that order matters.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyscope {

inline uint64_t hash_bytes(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

inline uint64_t hash_combine(uint64_t seed, uint64_t value) {
  uint64_t x = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace lazyscope
