// laya-run's decision commands (decide.cpp, calibrate.cpp) and decoder commands (generate.cpp);
// main.cpp dispatches to them.
#pragma once

#include <string>

#include "ir/status.h"
#include "runtime/text/json.h"

namespace laya::tools {

// `laya-run route`: the checkpoint the upstream Router would choose for a request body.
int cmd_route(int argc, char** argv);
// `laya-run decide`: a typed decision on a .laya model (or --explain: the rows it would read).
int cmd_decide(int argc, char** argv);
// `laya-run calibrate`: decision temperatures fitted on labelled questions (calibrate.cpp).
int cmd_calibrate(int argc, char** argv);

// `laya-run bench`: latency, throughput and memory of a model through the C API (bench.cpp).
int cmd_bench(int argc, char** argv);

// `laya-run generate`: greedy tokens from a decoder over a KV cache (runtime/decoder.h).
int cmd_generate(int argc, char** argv);
// `laya-run score`: teacher-forced top-K next-token predictions after each prefix of given ids.
int cmd_score(int argc, char** argv);

// The request file's bytes ("-": stdin); kRequestTooLarge past 2 MiB.
Result<std::string> read_request_file(const std::string& path);
// One line of JSON (non-ASCII kept) on stdout.
void print_json(const json::Value& v);

}  // namespace laya::tools
