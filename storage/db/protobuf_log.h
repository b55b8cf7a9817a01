// Protobuf's own log (e.g. "String field ... contains invalid UTF-8 data"
// while parsing a corrupt bundle) routed into LazyScope's errors, instead of
// a raw "[libprotobuf ERROR ...]" line on stderr before our message.
#pragma once

#include <string>
#include <vector>

namespace lazyscope::storage {

// Installs LazyScope's handler for protobuf's log, once per process (later
// calls do nothing). Messages logged while a ProtobufLogCapture is alive on
// the same thread go to it; any other is printed as one "lazyscope: protobuf
// says: ..." line on stderr. Programs call it at start; every
// ProtobufLogCapture calls it too.
void route_protobuf_log();

// Collects what protobuf logs on this thread while it lives, for the error
// about to be raised. Nests: the innermost capture gets the messages.
class ProtobufLogCapture {
 public:
  ProtobufLogCapture();
  ~ProtobufLogCapture();
  ProtobufLogCapture(const ProtobufLogCapture&) = delete;
  ProtobufLogCapture& operator=(const ProtobufLogCapture&) = delete;

  void add(const std::string& message) { messages_.push_back(message); }
  const std::vector<std::string>& messages() const { return messages_; }
  // " (protobuf: MESSAGE; MESSAGE)", or "" when nothing was logged: appended
  // to a HistoryError's text.
  std::string detail() const;

 private:
  std::vector<std::string> messages_;
  ProtobufLogCapture* outer_;
};

}  // namespace lazyscope::storage
