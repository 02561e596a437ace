// laya-serve's HTTP side: upstream laya-serve's routes and refusals (laya 0.4.15, laya/serve.py)
// over Boost.Beast, in front of the models' batchers (models.h).
//
// Why Beast and not cpp-httplib (Debian's 0.11.4): httplib serves each connection on a pool
// thread and reads bodies only whole or through a callback, so a refusal sent before the body
// (401, 503, a Content-Length over 2 MiB) leaves the body on the connection to be parsed as the
// next request; it times reads per recv (a slow sender that trickles a byte a second never times
// out as a whole); and it listens with a backlog of 5 and selects on fds below 1024. Beast
// (Boost 1.74, Debian) gives the parser and the socket to us: header first, then auth,
// admission and limits, then the body with a deadline over the whole read, early answers closing
// the connection, a listen backlog we choose, and an event loop of a few threads whatever the
// number of connections.
//
// Per request, in upstream's order: route (404 / 405 / 307), auth (401, constant-time), an
// admission slot (503 + Retry-After: 1 when all LAYA_MAX_CONCURRENT are taken), Content-Length
// (413), the body within LAYA_BODY_READ_TIMEOUT (408) and 2 MiB (413), zstd decoding
// (Content-Encoding: zstd, capped at 2 MiB), JSON (400), then the model (by name or by the
// router) and its batcher; the answer with Server-Timing / X-Inference-Time-Ms and
// x-typesafe-request-id.
#pragma once

#include <memory>
#include <string>

#include "tools/laya-serve/config.h"

namespace laya::serve {

class Server {
 public:
  explicit Server(Config cfg);
  ~Server();
  // Loads and warms every model (exits 1 on failure, naming the model and the reason).
  bool load_models(std::string* err);
  // Binds and listens; prints "laya-serve: listening on http://HOST:PORT" to stdout.
  bool listen(std::string* err);
  int port() const;  // the bound port (after listen)
  // Serves until SIGTERM / SIGINT, then drains; returns the exit code (0).
  int run();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace laya::serve
