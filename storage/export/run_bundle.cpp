#include "export/run_bundle.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "db/history_file.h"
#include "db/protobuf_log.h"

namespace lazyscope::storage {
namespace {

constexpr const char* kEndMarker = "end";

// payload_checksum's key (field 1001, wire type fixed64) and value: the last
// kChecksumFieldBytes bytes of a format-2 file.
constexpr uint32_t kChecksumTag = (1001u << 3) | 1u;
constexpr size_t kChecksumFieldBytes = 2 + 8;

// FNV-1a 64: detects corruption (a flipped bit, a changed byte); a bundle is
// not a signature, so nothing stronger is needed.
uint64_t fnv1a64(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string checksum_field(uint64_t checksum) {
  std::string field;
  google::protobuf::io::StringOutputStream stream(&field);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteTag(kChecksumTag);
  coded.WriteLittleEndian64(checksum);
  coded.Trim();
  return field;
}

// Every graph a compile or an execution names must be in the bundle: `show`
// and the graph views read it. A bundle lacking one is refused whole.
void check_graphs_present(const pb::RunBundle& bundle, const std::string& path) {
  std::unordered_set<uint64_t> held;
  for (const pb::StoredGraph& graph : bundle.graphs()) held.insert(graph.hash());
  for (const pb::Event& event : bundle.events()) {
    uint64_t hash = 0;
    const char* kind = nullptr;
    if (event.has_compile()) {
      hash = event.compile().graph_hash();
      kind = "a compile";
    } else if (event.has_execute()) {
      hash = event.execute().graph_hash();
      kind = "an execution";
    } else {
      continue;
    }
    if (!held.contains(hash)) {
      char hex[20];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
      throw HistoryError(path + ": the bundle is corrupt: " + kind + " of step " +
                         std::to_string(event.has_compile() ? event.compile().step() : event.execute().step()) +
                         " refers to graph " + hex + ", which the bundle does not hold; nothing was imported");
    }
  }
}

}  // namespace

void write_run_bundle_file(pb::RunBundle bundle, const std::string& path) {
  bundle.set_magic(kRunBundleMagic);
  bundle.set_format_version(kRunBundleFormatVersion);
  bundle.set_end_marker(kEndMarker);
  const std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw HistoryError(path + ": cannot write the bundle (cannot create " + temporary + ")");
    // Deterministic: the same run exports to the same bytes.
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!bundle.SerializeToCodedStream(&coded)) throw HistoryError(path + ": cannot serialize the run");
    }
    // Appended after the rest: a field after the others parses like any
    // field, and the checksum can cover every byte before it.
    bytes += checksum_field(fnv1a64(bytes));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw HistoryError(path + ": cannot write the bundle (disk full?)");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::remove(temporary.c_str());
    throw HistoryError(path + ": cannot write the bundle: " + error.message());
  }
}

pb::RunBundle read_run_bundle_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw HistoryError(path +
                       ": is a folder, not a run bundle (give the file `lazyscope export RUN --bundle FILE` wrote)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HistoryError(path + ": no such bundle file (or it cannot be read)");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  const std::string not_a_bundle = path +
                                   ": not a LazyScope run bundle (write one with `lazyscope export RUN --bundle FILE`)";
  pb::RunBundle bundle;
  if (data.empty()) throw HistoryError(not_a_bundle + "; the file is empty");
  ProtobufLogCapture protobuf_log;  // protobuf's own complaint, e.g. invalid UTF-8 in a string
  if (!bundle.ParseFromString(data)) {
    // A bundle cut short mid-field does not parse; neither do most other files.
    throw HistoryError(bundle.magic() == kRunBundleMagic
                           ? path + ": the bundle is truncated or corrupt" + protobuf_log.detail()
                           : not_a_bundle);
  }
  if (bundle.magic() != kRunBundleMagic) throw HistoryError(not_a_bundle);
  if (bundle.format_version() > kRunBundleFormatVersion) {
    throw HistoryError(path + ": the bundle was written by a newer LazyScope (format " +
                       std::to_string(bundle.format_version()) + ", this build reads up to " +
                       std::to_string(kRunBundleFormatVersion) + ")");
  }
  // Format 1 had no checksum; from format 2 on it is required, and checked
  // whenever present (a flipped bit may have changed the version too).
  if (bundle.payload_checksum() != 0 || bundle.format_version() >= 2) {
    const bool placed = data.size() > kChecksumFieldBytes &&
                        data.compare(data.size() - kChecksumFieldBytes, kChecksumFieldBytes,
                                     checksum_field(bundle.payload_checksum())) == 0;
    if (!placed ||
        fnv1a64(std::string_view(data).substr(0, data.size() - kChecksumFieldBytes)) != bundle.payload_checksum()) {
      throw HistoryError(path +
                         ": the bundle is corrupt (its checksum does not match its contents); "
                         "nothing was imported, export the run again");
    }
  }
  if (bundle.end_marker() != kEndMarker) {
    throw HistoryError(path + ": the bundle is truncated (its end is missing); export the run again");
  }
  check_graphs_present(bundle, path);
  return bundle;
}

}  // namespace lazyscope::storage
