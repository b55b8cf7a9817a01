// Writes the small JSON values the runs table keeps (arguments, settings,
// tags). Reading them back is SQLite's json_each(), so there is no parser here.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lazyscope::storage {

// Appends `text` as a quoted JSON string (UTF-8 passes through unchanged).
void append_json_string(std::string& out, std::string_view text);

// ["a", "b"]
template <typename Strings> std::string json_array(const Strings& items) {
  std::string out = "[";
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, item);
  }
  return out + "]";
}

// [1, 2, 3]
template <typename Numbers> std::string json_number_array(const Numbers& items) {
  std::string out = "[";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += std::to_string(item);
  }
  return out + "]";
}

// {"key": "value"} in the given order; callers sort the keys so that equal
// settings give byte-equal text.
std::string json_object(const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace lazyscope::storage
