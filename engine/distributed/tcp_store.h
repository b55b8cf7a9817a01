// The rendezvous store over TCP that node 0's launcher serves, so that the
// workers of several machines meet without a shared folder: Debian's Gloo
// has a file, a hash, a prefix and a Redis store, but no TCP store.
//
// The launcher (runner/launch.cpp) serves it on its --master-port socket once
// the nodes have agreed on the job; a worker's process group
// (process_group.cpp) reaches it when its rendezvous is "tcp://HOST:PORT"
// (LAZYSCOPE_RDZV_DIR as the launcher sets it) through TcpStore, a
// gloo::rendezvous::Store (tcp_store_client.h; set, get, wait).
//
// Wire protocol, after the client's hello line "store\n": requests are an
// op byte and length-prefixed (u32, host order: every node runs this same
// build on x86-64) strings:
//   'S' key value          -> 'K'
//   'G' key timeout_ms      -> 'V' value, or 'T' (not set within timeout_ms)
//   'W' n key... timeout_ms -> 'K' (every key set), or 'T'
// Waiting happens in the server (one thread per connection, a handful: one
// per worker), so a wait costs one round trip, not a polling loop.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lazyscope::distributed {

// "tcp://HOST:PORT" -> {HOST, PORT}; nullopt for anything else (a folder).
struct TcpAddress {
  std::string host;
  int port = 0;
};
std::optional<TcpAddress> parse_tcp_rendezvous(const std::string& rendezvous);
std::string tcp_rendezvous(const std::string& host, int port);

class StoreServer {
 public:
  // Serves on `listen_fd`, a listening socket it does not own, until stop().
  explicit StoreServer(int listen_fd);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Ends every connection and the threads; idempotent.
  void stop();

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // data_, clients_, client_fds_
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> data_;
  std::vector<std::thread> clients_;
  std::vector<int> client_fds_;
  std::thread acceptor_;
};

}  // namespace lazyscope::distributed
