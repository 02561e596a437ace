// Fuzz target: any bytes as what a client sends laya-serve, over a loopback connection to a
// server running in this process on the tiny Laya checkpoint (LAYA_FUZZ_MODEL): the HTTP parser,
// routing, auth, admission, body limits, zstd decoding, JSON, the request checks, the router and
// decisions, and the responses. The input is sent whole, the sending side shut, and the response
// read until the server closes (or 2 s pass). Any input must leave the server answering: a
// crash, a sanitizer report or a hang fails. Seeds: seeds/serve_http (raw requests).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "tools/laya-serve/config.h"
#include "tools/laya-serve/server.h"

namespace {

struct Fixture {
  laya::serve::Server* server = nullptr;  // never destroyed: its thread serves until exit
  int port = 0;
  Fixture() {
    laya::serve::Config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.models = {{"m", LAYA_FUZZ_MODEL}};
    cfg.max_concurrent = 4;
    cfg.body_read_timeout_s = 0.5;
    cfg.keep_alive_s = 0.5;
    cfg.batch_window_ms = 0;
    cfg.threads = 1;
    server = new laya::serve::Server(cfg);
    std::string err;
    if (!server->load_models(&err) || !server->listen(&err)) std::abort();
    port = server->port();
    std::thread([s = server] { s->run(); }).detach();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture();
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(f->port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(s, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    shutdown(s, SHUT_WR);
    char buf[4096];
    while (recv(s, buf, sizeof buf, 0) > 0) {
    }
  }
  close(s);
  return 0;
}
