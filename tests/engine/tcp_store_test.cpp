// The rendezvous store node 0's launcher serves (engine/distributed/
// tcp_store.h) and the workers' client of it, in one process over loopback:
// set/get/wait as Gloo's stores behave, timeouts, a latecomer of the nodes'
// handshake, a server that ends, and a server that is not there.
#include <arpa/inet.h>
#include <gloo/common/error.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "distributed/tcp_store.h"
#include "distributed/tcp_store_client.h"

namespace lazyscope::distributed {
namespace {

using std::chrono::milliseconds;

// A listening socket on a free loopback port.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(::listen(fd, 16), 0);
    socklen_t len = sizeof sa;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
  }
  ~Listener() { ::close(fd); }
};

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(TcpStore, ParsesOnlyTcpAddresses) {
  const auto tcp = parse_tcp_rendezvous(tcp_rendezvous("10.0.0.1", 29500));
  ASSERT_TRUE(tcp.has_value());
  EXPECT_EQ(tcp->host, "10.0.0.1");
  EXPECT_EQ(tcp->port, 29500);
  EXPECT_FALSE(parse_tcp_rendezvous("/tmp/lazyscope-rdzv").has_value());
  EXPECT_FALSE(parse_tcp_rendezvous("tcp://host").has_value());
  EXPECT_FALSE(parse_tcp_rendezvous("tcp://host:0").has_value());
  EXPECT_FALSE(parse_tcp_rendezvous("tcp://host:12x").has_value());
}

TEST(TcpStore, SetGetAndWaitAcrossClients) {
  Listener listener;
  StoreServer server(listener.fd);
  TcpStore a("127.0.0.1", listener.port, milliseconds(2000));
  TcpStore b("127.0.0.1", listener.port, milliseconds(2000));
  // Not there yet: a short wait times out as a Gloo IO error (what
  // process_group's arrival loop expects).
  EXPECT_THROW(a.wait({"rank_1"}, milliseconds(50)), gloo::IoException);
  // A wait and a get block until another client sets the key.
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    b.set("rank_1", bytes("addr of rank 1"));
  });
  a.wait({"rank_1"});
  setter.join();
  EXPECT_EQ(a.get("rank_1"), bytes("addr of rank 1"));
  // Binary values and empty ones come back as they went.
  const std::vector<char> binary = {'\0', '\n', '\xff', 'x'};
  b.set("bin", binary);
  b.set("empty", {});
  EXPECT_EQ(a.get("bin"), binary);
  EXPECT_TRUE(a.get("empty").empty());
  b.set("bin", bytes("again"));
  EXPECT_EQ(a.get("bin"), bytes("again"));
  a.wait({"rank_1", "bin", "empty"}, milliseconds(10));
}

TEST(TcpStore, GetOfAKeyNobodySetsTimesOut) {
  Listener listener;
  StoreServer server(listener.fd);
  TcpStore a("127.0.0.1", listener.port, milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  try {
    a.get("never");
    FAIL() << "no timeout";
  } catch (const gloo::IoException& e) {
    EXPECT_NE(std::string(e.what()).find("key never was not set"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(TcpStore, ALateNodeIsToldTheJobHasStarted) {
  Listener listener;
  StoreServer server(listener.fd);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(listener.port));
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string hello = "node 1 2 1\n";
  ASSERT_EQ(::write(fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  std::string answer;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n') answer += c;
  ::close(fd);
  EXPECT_EQ(answer, "error the job has already started: every node had joined it");
}

TEST(TcpStore, AServerThatEndsIsAnErrorNotAHang) {
  Listener listener;
  auto server = std::make_unique<StoreServer>(listener.fd);
  TcpStore a("127.0.0.1", listener.port, milliseconds(1000));
  a.set("k", bytes("v"));
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(100));
    server->stop();
  });
  EXPECT_THROW(a.wait({"nobody sets this"}), gloo::IoException);  // the waiting client is let go
  stopper.join();
  EXPECT_THROW(a.set("k", bytes("v")), gloo::IoException);
}

TEST(TcpStore, NobodyListeningIsNamedWithinTheTimeout) {
  int port = 0;
  {
    Listener closed;  // a port that was free a moment ago, closed again
    port = closed.port;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    TcpStore a("127.0.0.1", port, milliseconds(300));
    FAIL() << "connected to nobody";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach the rendezvous store of node 0's launcher at 127.0.0.1:" +
                                         std::to_string(port) + " (Connection refused)"),
              std::string::npos)
        << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, milliseconds(300));  // it retried: node 0 may start after this node
  EXPECT_LT(took, std::chrono::seconds(5));
}

}  // namespace
}  // namespace lazyscope::distributed
