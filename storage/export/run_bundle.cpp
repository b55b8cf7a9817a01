#include "export/run_bundle.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "db/history_file.h"

namespace lazyscope::storage {
namespace {

constexpr const char* kEndMarker = "end";

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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HistoryError(path + ": no such bundle file (or it cannot be read)");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  const std::string not_a_bundle =
      path + ": not a LazyScope run bundle (write one with `lazyscope export RUN --bundle FILE`)";
  pb::RunBundle bundle;
  if (data.empty()) throw HistoryError(not_a_bundle + "; the file is empty");
  if (!bundle.ParseFromString(data)) {
    // A bundle cut short mid-field does not parse; neither do most other files.
    throw HistoryError(bundle.magic() == kRunBundleMagic ? path + ": the bundle is truncated or corrupt"
                                                         : not_a_bundle);
  }
  if (bundle.magic() != kRunBundleMagic) throw HistoryError(not_a_bundle);
  if (bundle.format_version() > kRunBundleFormatVersion) {
    throw HistoryError(path + ": the bundle was written by a newer LazyScope (format " +
                       std::to_string(bundle.format_version()) + ", this build reads up to " +
                       std::to_string(kRunBundleFormatVersion) + ")");
  }
  if (bundle.end_marker() != kEndMarker) {
    throw HistoryError(path + ": the bundle is truncated (its end is missing); export the run again");
  }
  return bundle;
}

}  // namespace lazyscope::storage
