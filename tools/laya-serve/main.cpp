// laya-serve: Laya decisions over upstream laya-serve's HTTP API (server.h, docs/serving.md).
#include <csignal>
#include <cstdio>
#include <string>

#include "tools/laya-serve/config.h"
#include "tools/laya-serve/server.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  laya::serve::Config cfg;
  std::string err;
  bool usage = false, help = false;
  if (!laya::serve::load_config(argc, argv, &cfg, &err, &usage, &help)) {
    std::fprintf(stderr, "laya-serve: %s\n", err.c_str());
    if (usage) std::fprintf(stderr, "\n%s", laya::serve::usage_text());
    return usage ? 2 : 1;
  }
  if (help) {
    std::fputs(laya::serve::usage_text(), stdout);
    return 0;
  }
  laya::serve::Server server(cfg);
  if (!server.load_models(&err) || !server.listen(&err)) {
    std::fprintf(stderr, "laya-serve: %s\n", err.c_str());
    return 1;
  }
  return server.run();
}
