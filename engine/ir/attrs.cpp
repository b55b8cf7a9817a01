#include "ir/attrs.h"

#include <cstring>

#include "core/error.h"
#include "core/hash.h"

namespace lazyscope {

const AttrValue& Attrs::find(const char* name) const {
  for (const Attr& a : attrs_) {
    if (std::strcmp(a.name, name) == 0) return a.value;
  }
  throw EngineError(std::string("missing attribute '") + name + "'");
}

int64_t Attrs::get_int(const char* name) const { return std::get<int64_t>(find(name)); }
bool Attrs::get_bool(const char* name) const { return std::get<bool>(find(name)); }
double Attrs::get_double(const char* name) const { return std::get<double>(find(name)); }
const std::vector<int64_t>& Attrs::get_ints(const char* name) const {
  return std::get<std::vector<int64_t>>(find(name));
}

namespace {

// Values compared as the hash reads them: a double by its bits, so that
// -0.0 and 0.0 (clamp's bound, leaky_relu's slope: 1/x tells them apart)
// are different attributes, and a NaN equals itself.
bool same_bits(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) {
    const double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  return a == b;
}

}  // namespace

bool Attrs::same_items(const Attrs& other) const {
  if (attrs_.size() != other.attrs_.size()) return false;
  for (size_t i = 0; i < attrs_.size(); ++i) {
    const Attr &a = attrs_[i], &b = other.attrs_[i];
    if ((a.name != b.name && std::strcmp(a.name, b.name) != 0) || !same_bits(a.value, b.value)) return false;
  }
  return true;
}

uint64_t Attrs::hash() const {
  uint64_t h = 0;
  for (const Attr& a : attrs_) {
    h = hash_combine(h, hash_bytes(a.name, std::strlen(a.name)));
    h = hash_combine(h, a.value.index());
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            h = hash_combine(h, hash_bytes(v.data(), v.size() * sizeof(int64_t)));
          } else {
            h = hash_combine(h, hash_bytes(&v, sizeof(v)));
          }
        },
        a.value);
  }
  return h;
}

std::string Attrs::value_str(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          std::string s = "[";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
          return s + "]";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else {
          return std::to_string(v);
        }
      },
      value);
}

}  // namespace lazyscope
