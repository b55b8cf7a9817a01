#include "db/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <mutex>

namespace lazyscope::storage {
namespace {

thread_local ProtobufLogCapture* active_capture = nullptr;

void handle_protobuf_log(google::protobuf::LogLevel level, const char* /*file*/, int /*line*/,
                         const std::string& message) {
  if (active_capture != nullptr) {
    active_capture->add(message);
    return;
  }
  // Nobody is about to explain it: say it once, in our words, not protobuf's.
  if (level >= google::protobuf::LOGLEVEL_WARNING) {
    std::fprintf(stderr, "lazyscope: protobuf says: %s\n", message.c_str());
  }
}

}  // namespace

void route_protobuf_log() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&handle_protobuf_log); });
}

ProtobufLogCapture::ProtobufLogCapture() : outer_(active_capture) {
  route_protobuf_log();
  active_capture = this;
}

ProtobufLogCapture::~ProtobufLogCapture() { active_capture = outer_; }

std::string ProtobufLogCapture::detail() const {
  if (messages_.empty()) return "";
  std::string text = " (protobuf: ";
  for (size_t i = 0; i < messages_.size(); ++i) {
    if (i > 0) text += "; ";
    text += messages_[i];
  }
  return text + ")";
}

}  // namespace lazyscope::storage
