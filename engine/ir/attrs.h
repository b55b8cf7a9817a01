// Op attributes: a short list of named, typed values. They take part in the
// node hash, so two graphs that differ only in an attribute (a reduction's
// dims, say) are different graphs.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace lazyscope {

using AttrValue = std::variant<int64_t, double, bool, std::vector<int64_t>>;

struct Attr {
  const char* name;  // a string literal
  AttrValue value;
};

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<Attr> attrs) : attrs_(attrs) {}

  const std::vector<Attr>& items() const { return attrs_; }
  bool empty() const { return attrs_.empty(); }

  // Throws EngineError if the attribute is missing or has another type.
  int64_t get_int(const char* name) const;
  bool get_bool(const char* name) const;
  double get_double(const char* name) const;
  const std::vector<int64_t>& get_ints(const char* name) const;

  uint64_t hash() const;
  // The same names (compared as strings) with the same values, in the same
  // order: doubles by their bits, as hash() reads them.
  bool operator==(const Attrs& other) const { return attrs_.empty() ? other.attrs_.empty() : same_items(other); }
  static std::string value_str(const AttrValue& v);

 private:
  const AttrValue& find(const char* name) const;
  bool same_items(const Attrs& other) const;
  std::vector<Attr> attrs_;
};

}  // namespace lazyscope
