#include "distributed/tcp_store.h"

#include <gloo/common/error.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "distributed/tcp_store_client.h"

namespace lazyscope::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxField = 64u << 20;  // a key or value; Gloo's are addresses of a few hundred bytes
constexpr const char* kHello = "store";

// Reads exactly n bytes; false at EOF, on an error, or past `deadline`.
bool read_exact(int fd, void* out, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_exact(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_field(std::string& out, const char* data, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.append(data, n);
}

// The server waits for its clients without a deadline of its own: a client
// that goes away closes the connection, and stop() shuts every one down.
constexpr auto kForever = std::chrono::hours(24 * 365);

bool get_u32(int fd, uint32_t& v, Clock::time_point deadline) { return read_exact(fd, &v, sizeof v, deadline); }

bool get_field(int fd, std::string& out, Clock::time_point deadline) {
  uint32_t n = 0;
  if (!get_u32(fd, n, deadline) || n > kMaxField) return false;
  out.resize(n);
  return n == 0 || read_exact(fd, out.data(), n, deadline);
}

}  // namespace

std::optional<TcpAddress> parse_tcp_rendezvous(const std::string& rendezvous) {
  constexpr std::string_view kScheme = "tcp://";
  if (!rendezvous.starts_with(kScheme)) return std::nullopt;
  const std::string rest = rendezvous.substr(kScheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  try {
    size_t used = 0;
    const int port = std::stoi(rest.substr(colon + 1), &used);
    if (used != rest.size() - colon - 1 || port < 1 || port > 65535) return std::nullopt;
    return TcpAddress{rest.substr(0, colon), port};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string tcp_rendezvous(const std::string& host, int port) { return "tcp://" + host + ":" + std::to_string(port); }

// ---- the server (node 0's launcher) ---------------------------------------

StoreServer::StoreServer(int listen_fd) : listen_fd_(listen_fd), acceptor_([this] { accept_loop(); }) {}

StoreServer::~StoreServer() { stop(); }

void StoreServer::stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard lock(mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes their reads
  }
  changed_.notify_all();  // and their waits
  for (std::thread& t : clients_) t.join();
  for (int fd : client_fds_) ::close(fd);
}

void StoreServer::accept_loop() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    std::lock_guard lock(mu_);
    client_fds_.push_back(fd);
    clients_.emplace_back([this, fd] { serve(fd); });
  }
}

void StoreServer::serve(int fd) {
  // The hello: a worker's store client, or a latecomer of the nodes'
  // handshake (runner/launch.cpp), which is told the job has started.
  std::string hello;
  char c = 0;
  const auto hello_deadline = Clock::now() + std::chrono::seconds(5);
  while (hello.size() < 64 && read_exact(fd, &c, 1, hello_deadline) && c != '\n') hello += c;
  if (hello != kHello) {
    if (hello.starts_with("node ")) {
      write_exact(fd, "error the job has already started: every node had joined it\n");
    }
    ::shutdown(fd, SHUT_RDWR);
    return;
  }
  const auto deadline = Clock::now() + kForever;
  while (!stopping_.load()) {
    char op = 0;
    if (!read_exact(fd, &op, 1, deadline)) break;
    std::string reply;
    if (op == 'S') {
      std::string key, value;
      if (!get_field(fd, key, deadline) || !get_field(fd, value, deadline)) break;
      {
        std::lock_guard lock(mu_);
        data_[key] = std::vector<char>(value.begin(), value.end());
      }
      changed_.notify_all();
      reply.push_back('K');
    } else if (op == 'G' || op == 'W') {
      std::vector<std::string> keys;
      uint32_t count = 1;
      if (op == 'W' && (!get_u32(fd, count, deadline) || count > 4096)) break;
      keys.resize(count);
      bool ok = true;
      for (std::string& key : keys) ok = ok && get_field(fd, key, deadline);
      uint32_t timeout_ms = 0;
      if (!ok || !get_u32(fd, timeout_ms, deadline)) break;
      std::unique_lock lock(mu_);
      const bool present = changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
        if (stopping_.load()) return true;
        for (const std::string& key : keys) {
          if (!data_.contains(key)) return false;
        }
        return true;
      });
      if (stopping_.load()) break;
      if (!present) {
        reply.push_back('T');
      } else if (op == 'W') {
        reply.push_back('K');
      } else {
        const std::vector<char>& value = data_.at(keys[0]);
        reply.push_back('V');
        put_field(reply, value.data(), value.size());
      }
    } else {
      break;  // not our protocol
    }
    if (!write_exact(fd, reply)) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

// ---- the client (a worker) ------------------------------------------------

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : address_(host + ":" + std::to_string(port)), timeout_(timeout) {
  // Node 0's launcher may not be listening yet (the nodes start in any
  // order): retry until the timeout.
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no answer";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  while (true) {
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (resolved != 0 || found == nullptr) {
      last_error = std::string("the host name does not resolve (") + ::gai_strerror(resolved) + ")";
    } else {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const bool connected = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
      if (!connected) last_error = std::strerror(errno);
      ::freeaddrinfo(found);
      if (connected) {
        int yes = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        if (write_exact(fd, std::string(kHello) + "\n")) {
          fd_ = fd;
          return;
        }
        last_error = std::strerror(errno);
      }
      if (fd >= 0) ::close(fd);
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw EngineError("cannot reach the rendezvous store of node 0's launcher at " + address_ + " (" + last_error + ")");
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

char TcpStore::request(const std::string& message) {
  if (!write_exact(fd_, message)) {
    throw gloo::IoException("the rendezvous store at " + address_ + " closed the connection (node 0's launcher ended)");
  }
  // The server answers a wait when it ends; allow it that long and a margin.
  const auto deadline = Clock::now() + timeout_ + std::chrono::seconds(10);
  char answer = 0;
  if (!read_exact(fd_, &answer, 1, deadline)) {
    throw gloo::IoException("no answer from the rendezvous store at " + address_ + " (node 0's launcher ended)");
  }
  return answer;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::string message = "S";
  put_field(message, key.data(), key.size());
  put_field(message, data.data(), data.size());
  std::lock_guard lock(mu_);
  if (request(message) != 'K') throw gloo::IoException("the rendezvous store at " + address_ + " refused set " + key);
}

std::vector<char> TcpStore::get(const std::string& key) {
  std::string message = "G";
  put_field(message, key.data(), key.size());
  put_u32(message, static_cast<uint32_t>(timeout_.count()));
  std::lock_guard lock(mu_);
  const char answer = request(message);
  if (answer == 'T') {
    throw gloo::IoException("key " + key + " was not set in the rendezvous store at " + address_ + " within " +
                            std::to_string(timeout_.count()) + " ms");
  }
  std::string value;
  if (answer != 'V' || !get_field(fd_, value, Clock::now() + timeout_)) {
    throw gloo::IoException("a broken answer from the rendezvous store at " + address_);
  }
  return {value.begin(), value.end()};
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::string message = "W";
  put_u32(message, static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) put_field(message, key.data(), key.size());
  put_u32(message, static_cast<uint32_t>(std::max<int64_t>(timeout.count(), 0)));
  std::lock_guard lock(mu_);
  if (request(message) != 'K') {
    throw gloo::IoException("keys not set in the rendezvous store at " + address_ + " within " +
                            std::to_string(timeout.count()) + " ms");
  }
}

}  // namespace lazyscope::distributed
