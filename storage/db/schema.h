// The history's schema as data: an ordered table of migrations, each taking
// the file from version - 1 to version. A new schema version is one more row,
// never an edit of an old one (files in the wild were built from it).
#pragma once

#include <span>
#include <string_view>

namespace lazyscope::storage {

struct Migration {
  int version;
  const char* sql;  // constant DDL, applied with the migrations before it in one transaction
};

// Ordered by version, 1 .. kSchemaVersion with no gaps (checked at compile time).
std::span<const Migration> schema_migrations();

// Tables a file at kSchemaVersion must have; opening checks them so that a
// damaged or foreign file is refused at once rather than at its first query.
std::span<const std::string_view> schema_tables();

}  // namespace lazyscope::storage
