// laya-serve's configuration: upstream laya-serve's environment variables (laya 0.4.15,
// laya/serve.py), read with upstream's parsing and defaults, so a systemd unit written for
// upstream runs this server unchanged; flags override them. docs/serving.md lists every setting.
//
//   laya-serve --model PATH [--model NAME=PATH ...] [--port N] [--host H] [options]
//
// PATH is a .laya file (an encoder decision model or a decoder) or a GGUF decoder; NAME defaults
// to the model's own name (laya_model_info.name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace laya::serve {

struct ModelSpec {
  std::string name;  // empty: the model's own name
  std::string path;
};

struct Config {
  // upstream's variables
  std::string host = "0.0.0.0";       // LAYA_HOST
  int port = 8000;                    // LAYA_PORT
  std::string api_key;                // LAYA_API_KEY (empty: no auth)
  std::vector<ModelSpec> models;      // --model; LAYA_MODELS / LAYA_EXTRA_MODELS
  std::string default_model;          // LAYA_DEFAULT_MODEL (empty: the first model)
  int max_concurrent = 16;            // LAYA_MAX_CONCURRENT
  double body_read_timeout_s = 10.0;  // LAYA_BODY_READ_TIMEOUT
  int64_t max_token_budget = 8192;    // LAYA_MAX_TOKEN_BUDGET
  int64_t max_batch_tokens = 131072;  // LAYA_MAX_BATCH_TOKENS (upstream's pass chunking)
  bool jev_strict = false;            // LAYA_JEV_STRICT
  int threads = 0;                    // LAYA_THREADS (0: every core)
  int tournament_group = 0;           // LAYA_TOURNAMENT_GROUP (2..100; 0: off)
  bool auto_task = false;             // LAYA_AUTO_TASK
  std::string log_level = "info";     // LAYA_LOG_LEVEL
  // ours
  double batch_window_ms = 10;  // --batch-window-ms: how long a batch waits to fill
  int max_batch = 16;           // --max-batch: requests per batch (1: batching off)
  int workers = 1;              // --workers: contexts (threads making decisions) per model
  std::string sequence_header = "X-Laya-Sequence";  // --sequence-header: the ordering key
  double keep_alive_s = 5;      // --keep-alive: idle connection timeout (uvicorn's 5 s)
  double drain_timeout_s = 30;  // --drain-timeout: SIGTERM's wait for in-flight requests
  int io_threads = 1;           // --io-threads: threads serving connections
};

// The environment, then argv (flags win). On an error: false, with the message upstream prints
// (e.g. "invalid LAYA_PORT 'x': must be an integer 1-65535") or the flag's, in `*err`; `*usage`
// is set when the error is a bad argument (exit 2) rather than a bad environment (exit 1).
bool load_config(int argc, const char* const* argv, Config* cfg, std::string* err, bool* usage,
                 bool* help);

// The --help text.
const char* usage_text();

}  // namespace laya::serve
