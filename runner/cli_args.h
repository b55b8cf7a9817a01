// What every history command shares: its arguments (positionals, flags,
// options with a value), the history it reads, the run and graph a person
// names, and JSON output of protobuf messages.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

namespace lazyscope::storage {
class HistoryReader;
}

namespace lazyscope::runner {

// A mistake in the command line or in what it names: printed after
// "lazyscope COMMAND: ", exit code 1 (a usage error is std::invalid_argument, 2).
class NotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandArgs {
  std::vector<std::string> positional;
  std::set<std::string> flags;                 // given flags, e.g. "--json"
  std::map<std::string, std::string> options;  // given options and their values
  std::string history;                         // --history, else the default history

  bool has(const std::string& flag) const { return flags.contains(flag); }
  std::string option(const std::string& name, const std::string& fallback = "") const;
};

// Throws std::invalid_argument for an unknown option or a missing value.
// "--history PATH" is accepted by every command.
CommandArgs parse_command_args(const std::vector<std::string>& args, const std::set<std::string>& flags,
                               const std::set<std::string>& options);

// The run a person means ("last", an id, a name); throws NotFound naming what
// was looked for and where.
int64_t resolve_run(const storage::HistoryReader& reader, const std::string& ref, const std::string& history);

// A graph of the run by its hash in hex (with or without 0x), or by a unique
// prefix of at least 4 digits; throws NotFound naming the run's graphs.
uint64_t resolve_graph(const storage::HistoryReader& reader, int64_t run_id, const std::string& ref);

std::string hash_hex(uint64_t hash);

// Protobuf's JSON with the .proto field names and every field printed.
std::string to_json(const google::protobuf::Message& message);

}  // namespace lazyscope::runner
