// Enum columns hold protobuf enum values; a value this build does not know
// (written by a newer one, or damaged) reads as the enum's UNSPECIFIED zero.
#pragma once

#include <cstdint>

namespace lazyscope::storage {

template <typename Enum> Enum enum_or_unspecified(int64_t stored, bool (*is_valid)(int)) {
  return is_valid(static_cast<int>(stored)) ? static_cast<Enum>(stored) : Enum{};
}

}  // namespace lazyscope::storage
