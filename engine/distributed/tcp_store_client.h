// The worker's side of the launcher's rendezvous store (tcp_store.h): a
// gloo::rendezvous::Store over one TCP connection. Private to the engine
// (it includes Gloo's headers, which only the engine sees).
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace lazyscope::distributed {

class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects to HOST:PORT, retrying while node 0's launcher is not yet
  // listening, for up to `timeout`; throws EngineError naming the address
  // when it cannot. `timeout` is also get()'s and wait()'s default.
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits for the key (as Gloo's FileStore does) up to the timeout.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // One request and its answer's first byte; throws gloo::IoException when
  // the connection broke (the launcher is gone).
  char request(const std::string& message);

  std::string address_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;  // one request at a time on the connection
  int fd_ = -1;
};

}  // namespace lazyscope::distributed
