#include "cli_args.h"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <cstdio>
#include <regex>
#include <stdexcept>

#include "db/history_file.h"
#include "query/history_reader.h"

namespace lazyscope::runner {

std::string CommandArgs::option(const std::string& name, const std::string& fallback) const {
  auto found = options.find(name);
  return found == options.end() ? fallback : found->second;
}

CommandArgs parse_command_args(const std::vector<std::string>& args, const std::set<std::string>& flags,
                               const std::set<std::string>& options) {
  CommandArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--history" || options.contains(arg)) {
      if (i + 1 >= args.size()) throw std::invalid_argument(arg + " needs a value");
      (arg == "--history" ? parsed.history : parsed.options[arg]) = args[++i];
    } else if (flags.contains(arg)) {
      parsed.flags.insert(arg);
    } else if (arg.starts_with("--") && arg.size() > 2) {
      throw std::invalid_argument("unknown option " + arg);
    } else {
      parsed.positional.push_back(arg);
    }
  }
  if (parsed.history.empty()) parsed.history = storage::default_history_path();
  return parsed;
}

int64_t resolve_run(const storage::HistoryReader& reader, const std::string& ref, const std::string& history) {
  if (auto run_id = reader.find_run(ref)) return *run_id;
  if (ref == "last") throw NotFound("no runs in " + history);
  throw NotFound("no run with id or name '" + ref + "' in " + history + " (`lazyscope runs` lists them)");
}

std::string hash_hex(uint64_t hash) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

namespace {

// The shortest hash prefix `graph` accepts.
constexpr size_t kMinHashPrefix = 4;

// Protobuf's JSON writes fixed64 hashes as decimal strings; the text output
// and `graph RUN HASH` use 16 hex digits. These fields are graph hashes.
std::string hashes_in_hex(const std::string& json) {
  static const std::regex kHashField(R"re("(hash|graph_hash|compared_with)": "([0-9]+)")re");
  std::string out;
  auto last = json.cbegin();
  for (std::sregex_iterator it(json.begin(), json.end(), kHashField), end; it != end; ++it) {
    const std::smatch& m = *it;
    out.append(last, m[0].first);
    out.push_back('"');
    out.append(m[1].first, m[1].second);
    out.append("\": \"");
    out.append(hash_hex(std::stoull(m[2].str())));
    out.push_back('"');
    last = m[0].second;
  }
  out.append(last, json.cend());
  return out;
}

}  // namespace

uint64_t resolve_graph(const storage::HistoryReader& reader, int64_t run_id, const std::string& ref) {
  std::string digits = ref;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits = digits.substr(2);
  for (char& c : digits) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto graphs = reader.graphs(run_id);
  std::vector<uint64_t> matches;
  const bool is_hex = !digits.empty() && digits.size() <= 16 &&
                      digits.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (is_hex) {
    for (const auto& graph : graphs) {
      const std::string hex = hash_hex(graph.hash());
      // A full hash may be written without its leading zeros.
      const bool exact = std::stoull(digits, nullptr, 16) == graph.hash();
      if (exact) return graph.hash();
      if (digits.size() >= kMinHashPrefix && hex.starts_with(digits)) matches.push_back(graph.hash());
    }
  }
  if (matches.size() == 1) return matches[0];
  const auto listing = [](const std::vector<uint64_t>& hashes) {
    std::string text;
    for (size_t i = 0; i < hashes.size() && i < 8; ++i) {
      if (i > 0) text += ", ";
      text += hash_hex(hashes[i]);
    }
    if (hashes.size() > 8) text += ", ...";
    return text;
  };
  const std::string run = "run " + std::to_string(run_id);
  if (matches.size() > 1) throw NotFound("graph '" + ref + "' is ambiguous in " + run + ": " + listing(matches));
  std::vector<uint64_t> all;
  for (const auto& graph : graphs) all.push_back(graph.hash());
  if (is_hex && digits.size() < kMinHashPrefix) {
    // A short prefix would match by accident as a run grows: say so rather
    // than "no graph".
    throw NotFound("graph '" + ref + "' is too short: give at least " + std::to_string(kMinHashPrefix) +
                   " hex digits of the hash (" + run + "'s graphs: " + listing(all) + ")");
  }
  throw NotFound("no graph '" + ref + "' in " + run +
                 (all.empty() ? std::string(" (it has no graphs)") : " (its graphs: " + listing(all) + ")"));
}

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) throw std::runtime_error("cannot print JSON: " + std::string(status.message()));
  return hashes_in_hex(json);
}

}  // namespace lazyscope::runner
