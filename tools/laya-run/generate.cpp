// laya-run generate / score: a decoder (a GGUF file, or a .laya decoder over a KV cache) run by
// runtime/decoder.h: the prompt prefilled in chunks, then one decode step per new token.
//
//   laya-run generate --model M (--prompt TEXT | --chat TEXT | --ids 1,2,3 | --prompts-file F)
//                     [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S]
//                     [--json] [--stop-after-json]
//                     [--prefix-cache [--warm-prompt TEXT | --warm-ids 1,2,3]]
//   laya-run score --model M --ids-file F.json [--top K] [--last]
//
// Exit codes: 0 success, 1 the model, a file or the runtime failed (message on stderr), 2 bad
// arguments.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/gguf.h"
#include "frontends/gguf_decoder.h"
#include "frontends/gguf_import.h"
#include "frontends/gguf_tokenizer.h"
#include "ir/model_file.h"
#include "kernels/kernels.h"
#include "runtime/decoder.h"
#include "runtime/text/chat_template.h"
#include "runtime/text/json.h"
#include "runtime/kv_cache.h"
#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/text/tokenizer/tokenizer.h"
#include "tools/cli.h"
#include "tools/laya-run/commands.h"
#include "tools/laya-run/decoder_model.h"

namespace laya::tools {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kGenerateUsage =
    "usage: laya-run generate --model M.gguf|M.laya (--prompt TEXT | --chat TEXT | --ids "
    "ID,ID,...\n"
    "                         | --prompts-file F) [options]\n"
    "\n"
    "Generation from a decoder over a KV cache: a GGUF file (llama / qwen2, imported as it is\n"
    "read) or a .laya decoder graph with a KV cache (states; laya-convert MODEL.gguf embeds the\n"
    "GGUF's vocabulary and chat template, so it answers as the GGUF does). The prompt is\n"
    "prefilled in chunks, then every new token is one decode step. Greedy unless a sampling\n"
    "option is given. Stops after --max-tokens, at the vocabulary's end-of-sequence id and, with\n"
    "--chat, at the template's end-of-turn token (<|im_end|>, <|eot_id|>); the stop id is\n"
    "included in ids.\n"
    "\n"
    "  --model M        a .gguf file or a .laya decoder\n"
    "  --prompt TEXT    raw text (not empty), tokenized as llama.cpp does (BOS per\n"
    "                   add_bos_token; a model with a GGUF vocabulary)\n"
    "  --chat TEXT      one user message rendered with the model's tokenizer.chat_template\n"
    "                   (ChatML: SmolLM2, Qwen2; Llama 3), with the assistant prompt after it;\n"
    "                   a model without a known template fails (exit 1)\n"
    "  --ids ID,ID,...  the prompt as token ids\n"
    "  --prompts-file F a JSON file {\"prompts\": [TEXT, ...]} (\"-\": stdin): each prompt as\n"
    "                   --prompt, one after the other in one process with --prefix-cache on;\n"
    "                   needs --json and prints one line per prompt\n"
    "  --max-tokens N   tokens to generate, 1..1000000 (default 16)\n"
    "  --temperature T  sample at temperature T, 0..100 (0: greedy; default 1 when any\n"
    "                   sampling option is given)\n"
    "  --top-k K        keep the K most likely tokens, 0..1000000 (default 0: all)\n"
    "  --top-p P        keep the fewest most likely tokens whose probability sums to P,\n"
    "                   (0, 1] (default 1: all)\n"
    "  --seed S         random seed, 0..9223372036854775807 (default 0): the same seed, model\n"
    "                   and options give the same ids (runtime/sampler.h)\n"
    "  --chunk N        prefill chunk in tokens, 1..4096 (default 128)\n"
    "  --kv-type T      f32 | f16: the KV cache's element type (default f16, as llama.cpp;\n"
    "                   f32 doubles its memory and attention's reads; a .laya decoder: the type\n"
    "                   laya-convert --kv-type stored, another one fails)\n"
    "  --json           print {\"prompt_ids\": [...], \"ids\": [...], \"text\": \"...\",\n"
    "                   \"finish_reason\": R, \"timings\": {...}} (text: the new ids decoded,\n"
    "                   special tokens skipped; \"\" without a tokenizer; R: \"stop\" at a stop\n"
    "                   id, \"length\" after --max-tokens, \"json\" by --stop-after-json)\n"
    "  --stop-after-json\n"
    "                   also stop once the reply's first JSON object (from its first '{')\n"
    "                   has closed (brackets counted outside strings)\n"
    "  --profile        time every node of the prefill and of every decode step and print\n"
    "                   the prefill's cost (ms over all its chunks) and the decode step's cost\n"
    "                   per token: per op (matmuls per weight type), the runner around\n"
    "                   execute (cache cells, reshape), the picker and the rest; --json adds\n"
    "                   timings.prefill_profile {\"ops\": {...}, \"execute\", ...} (ms) and\n"
    "                   timings.decode_profile {\"ops\": {...}, \"execute\", ...} (ms per token);\n"
    "                   matmuls the CPU runs as one stacked GEMV (q / k / v, gate / up: one\n"
    "                   x) share one measured time, split by their weights' bytes\n"
    "  --prefix-cache   keep prompt prefixes' KV (blocks of --prefix-block tokens) and reuse\n"
    "                   the longest cached one: only the rest is prefilled; --json adds\n"
    "                   timings.prefix_cache {\"hit_tokens\", \"lookups\", \"hits\", ...}\n"
    "  --prefix-block N tokens per prefix-cache block, 1..4096 (default 32)\n"
    "  --warm-prompt TEXT, --warm-ids ID,ID,...\n"
    "                   a prompt prefilled first in the same process (its output dropped)\n"
    "                   to fill the prefix cache, so the prompt that follows can hit it\n"
    "                   (implies --prefix-cache)\n"
    "  --threads N      CPU threads, 0..1024 (default 0: all cores)\n"
    "  --kernels K      auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B   backends in order of preference (default: cpu)\n";

constexpr const char* kScoreUsage =
    "usage: laya-run score --model M.gguf|M.laya --ids-file F.json [options]\n"
    "\n"
    "Teacher forcing: F holds {\"ids\": [...]}; the ids are prefilled (in chunks) and after each\n"
    "prefix the model's top-K next-token predictions are printed as one line of JSON:\n"
    "{\"positions\": [{\"top_ids\": [...], \"top_logits\": [...]}, ...]} (one per id; logits\n"
    "descending, the lower id first on ties).\n"
    "\n"
    "  --model M        a .gguf file or a .laya decoder\n"
    "  --ids-file F     the JSON file (\"-\": stdin)\n"
    "  --top K          predictions per position, 1..1000 (default 5; with --last up to\n"
    "                   1000000: K = the vocabulary prints every logit)\n"
    "  --last           print the last position only\n"
    "  --chunk N        prefill chunk in tokens, 1..4096 (default 128)\n"
    "  --kv-type T      f32 | f16: the KV cache's element type (default f16, as llama.cpp;\n"
    "                   f32 doubles its memory and attention's reads; a .laya decoder: the type\n"
    "                   laya-convert --kv-type stored, another one fails)\n"
    "  --threads N      CPU threads, 0..1024 (default 0: all cores)\n"
    "  --kernels K      auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B   backends in order of preference (default: cpu)\n";

int usage_error(const std::string& msg, const char* usage) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), usage);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "laya-run: %s\n", s.to_string().c_str());
  return 1;
}

// The options generate and score share.
struct DecoderOptions {
  bool help = false;
  std::string model, kernels = "auto", backends = "cpu";
  int64_t threads = 0, chunk = 128;
  std::string kv_type;  // "" = the default (Decoder::kv_type)

  void declare(ArgParser& p) {
    p.flag("help", &help);
    p.text("model", &model);
    p.choice("kv-type", {"f32", "f16"}, &kv_type);
    p.choice("kernels", kernels::kernel_table_names(), &kernels);
    p.text("backends", &backends);
    p.integer("threads", 0, 1024, &threads);
    p.integer("chunk", 1, 4096, &chunk);
  }
  std::string session_options(runtime::SessionOptions* so) const {
    std::string err;
    so->backends.clear();
    if (!split_list(backends, "--backends", &so->backends, &err)) return err;
    so->backend.n_threads = static_cast<int>(threads);
    hal::BackendOptions cpu;
    cpu.n_threads = static_cast<int>(threads);
    cpu.settings = {{"kernels", kernels}};
    so->backend_options.emplace_back("cpu", cpu);
    return "";
  }
};

// "1,2,2,3" -> token ids (repeats allowed). False with `*err` on an empty list or an item that is
// not an id in [0, INT32_MAX].
bool parse_ids(const std::string& text, std::vector<int32_t>* out, std::string* err) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    int64_t v = 0;
    if (!parse_integer(std::string_view(text).substr(start, comma - start), 0, INT32_MAX,
                       "--ids item", &v, err))
      return false;
    out->push_back(static_cast<int32_t>(v));
    start = comma + 1;
  }
  return true;
}

// GenerateRequest::pick through runtime/sampler.h; `ctx` is the Sampler.
int32_t sample_token(std::span<const float> logits, void* ctx) {
  return static_cast<Sampler*>(ctx)->sample(logits.data(), nullptr);
}

// GenerateRequest::done for --stop-after-json: true once the brackets opened from the reply's
// first '{' are all closed again (outside JSON strings). Each new token's bytes are scanned once.
struct JsonEnd {
  const tok::Tokenizer* tokenizer = nullptr;  // borrowed
  size_t scanned = 0;                         // tokens scanned
  int depth = 0;
  bool started = false, in_string = false, escaped = false, closed = false;

  static bool done(std::span<const int32_t> out, void* ctx) {
    JsonEnd& j = *static_cast<JsonEnd*>(ctx);
    std::string piece;
    for (; j.scanned < out.size() && !j.closed; ++j.scanned) {
      if (!j.tokenizer->token_to_piece(out[j.scanned], false, &piece).is_ok()) continue;
      for (const char c : piece) {
        if (!j.started) {
          j.started = c == '{';
          j.depth = j.started ? 1 : 0;
        } else if (j.in_string) {
          if (j.escaped)
            j.escaped = false;
          else if (c == '\\')
            j.escaped = true;
          else if (c == '"')
            j.in_string = false;
        } else if (c == '"') {
          j.in_string = true;
        } else if (c == '{' || c == '[') {
          ++j.depth;
        } else if ((c == '}' || c == ']') && --j.depth == 0) {
          j.closed = true;
          break;
        }
      }
    }
    return j.closed;
  }
};

std::string id_list(const std::vector<int32_t>& v) {
  std::string out;
  for (int32_t x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// Per-node times of the decode steps (hal::ProfileSink), summed per node; no allocation per call.
struct NodeTimes {
  std::vector<double> ms;  // [graph nodes]
};

void on_node(void* user, ir::NodeId node, double ms, bool /*modelled*/) {
  std::vector<double>& v = static_cast<NodeTimes*>(user)->ms;
  if (node < v.size()) v[node] += ms;
}

// The node's row in the profile: its op, matmuls and embeddings with their weight type and shape.
std::string profile_key(const ir::Graph& g, const ir::Node& n) {
  std::string key = ir::op_name(n.op);
  if ((n.op == ir::Op::kMatMul || n.op == ir::Op::kEmbedding) && !n.inputs.empty()) {
    const ir::Value& w = g.values[n.inputs[n.op == ir::Op::kMatMul ? 1 : 0]];
    if (w.kind == ir::ValueKind::kWeight && w.shape.rank == 2)
      key += std::string(" ") + ir::dtype_name(w.dtype) + " [" + std::to_string(w.shape.dims[0].c) +
             ", " + std::to_string(w.shape.dims[1].c) + "]";
  }
  return key;
}

// Per-op rows (key, ms / n) of the node times t, largest first, and their sum.
std::vector<std::pair<std::string, double>> op_rows(const ir::Graph& g, const NodeTimes& t,
                                                    double n, double* sum) {
  std::vector<std::pair<std::string, double>> rows;
  for (size_t i = 0; i < g.nodes.size() && i < t.ms.size(); ++i) {
    if (t.ms[i] == 0) continue;
    const std::string key = profile_key(g, g.nodes[i]);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == key; });
    if (it == rows.end())
      rows.emplace_back(key, t.ms[i]);
    else
      it->second += t.ms[i];
  }
  *sum = 0;
  for (auto& r : rows) {
    r.second /= n;
    *sum += r.second;
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return rows;
}

// The decode profile, ms per decode step: rows (key, ms) largest first, then the runner's parts.
struct DecodeProfile {
  std::vector<std::pair<std::string, double>> ops;
  double execute = 0, nodes = 0, runner = 0, pick = 0, other = 0, token = 0;
};

DecodeProfile decode_profile(const ir::Graph& g, const NodeTimes& t,
                             const runtime::DecoderStats& s) {
  DecodeProfile p;
  if (s.decode_steps == 0) return p;
  const double n = static_cast<double>(s.decode_steps);
  p.ops = op_rows(g, t, n, &p.nodes);
  p.execute = s.decode_execute_ms / n;
  p.runner = (s.decode_step_ms - s.decode_execute_ms) / n;
  p.pick = s.decode_pick_ms / n;
  // A decode step and its pick from one token's time to the next.
  p.token = (s.token_ms.back() - s.token_ms.front()) / n;
  p.other = p.token - s.decode_step_ms / n - p.pick;
  return p;
}

// The prefill profile, ms over the whole prefill (all its chunks): rows (key, ms) largest first,
// the part inside Session::execute, and the rest of the prefill's time (cache cells, reshape, a
// prefix-cache restore).
struct PrefillProfile {
  std::vector<std::pair<std::string, double>> ops;
  double execute = 0, nodes = 0, other = 0, prefill = 0;
};

PrefillProfile prefill_profile(const ir::Graph& g, const NodeTimes& t,
                               const runtime::DecoderStats& s) {
  PrefillProfile p;
  p.ops = op_rows(g, t, 1.0, &p.nodes);
  p.execute = s.prefill_execute_ms;
  p.prefill = s.prefill_end_ms;
  p.other = p.prefill - p.execute;
  return p;
}

// A profile's rows, "  name  ms  share of total", the ops first, then `tail`.
void print_profile(const std::vector<std::pair<std::string, double>>& ops,
                   std::initializer_list<std::pair<const char*, double>> tail, double total) {
  auto row = [&](const char* name, double ms) {
    std::printf("  %-28s %8.3f  %5.1f%%\n", name, ms, total > 0 ? 100.0 * ms / total : 0.0);
  };
  for (const auto& [key, ms] : ops) row(key.c_str(), ms);
  for (const auto& [name, ms] : tail) row(name, ms);
}

json::Value json_ops(const std::vector<std::pair<std::string, double>>& ops) {
  json::Value o = json::Value::object();
  for (const auto& [key, ms] : ops) o.set(key, json::Value::number(ms));
  return o;
}

json::Value json_ids(const std::vector<int32_t>& v) {
  json::Value a = json::Value::array();
  for (int32_t x : v) a.push(json::Value::integer(x));
  return a;
}

std::string kernels_label(const std::string& k) {
  if (k != "auto") return k;
  return std::string("auto = ") +
         kernels::kernel_target_name(kernels::kernel_hwy_targets().front());
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  DecoderOptions common;
  bool json = false, stop_after_json = false;
  bool prefix_cache = false;
  bool profile = false;
  std::string prompt_text, chat_text, ids_text, prompts_file, warm_text, warm_ids_text;
  int64_t max_tokens = 16, prefix_block = 32;
  // Sampling options; the parser writes only given ones, so values outside the ranges mark
  // the absent ones.
  double temperature = -1, top_p = -1;
  int64_t top_k = -1, seed = -1;
  std::vector<std::string> positional;
  ArgParser p;
  common.declare(p);
  p.text("prompt", &prompt_text);
  p.text("chat", &chat_text);
  p.text("ids", &ids_text);
  p.text("prompts-file", &prompts_file);
  p.integer("max-tokens", 1, 1000000, &max_tokens);
  p.number("temperature", 0, 100, &temperature);
  p.integer("top-k", 0, 1000000, &top_k);
  p.number("top-p", 0, 1, &top_p, /*lo_open=*/true);
  p.integer("seed", 0, INT64_MAX, &seed);
  p.flag("json", &json);
  p.flag("profile", &profile);
  p.flag("stop-after-json", &stop_after_json);
  p.flag("prefix-cache", &prefix_cache);
  p.integer("prefix-block", 1, 4096, &prefix_block);
  p.text("warm-prompt", &warm_text);
  p.text("warm-ids", &warm_ids_text);
  if (!p.parse(argc, argv, 2, &positional)) return usage_error(p.error(), kGenerateUsage);
  if (common.help) {
    std::printf("%s", kGenerateUsage);
    return 0;
  }
  if (!positional.empty())
    return usage_error("unexpected argument '" + positional[0] + "'", kGenerateUsage);
  if (common.model.empty())
    return usage_error("generate needs --model M.gguf|M.laya", kGenerateUsage);
  const bool has_prompt = !prompt_text.empty(), has_chat = !chat_text.empty();
  const bool batch = !prompts_file.empty();
  if (has_prompt + has_chat + !ids_text.empty() + batch != 1)
    return usage_error(
        "generate needs one of --prompt TEXT, --chat TEXT, --ids ID,ID,... or --prompts-file F",
        kGenerateUsage);
  if (!warm_text.empty() && !warm_ids_text.empty())
    return usage_error("give one of --warm-prompt TEXT or --warm-ids ID,ID,...", kGenerateUsage);
  const bool warm = !warm_text.empty() || !warm_ids_text.empty();
  if (batch && (!json || warm))
    return usage_error("--prompts-file needs --json and takes no --warm-prompt / --warm-ids",
                       kGenerateUsage);
  prefix_cache = prefix_cache || warm || batch;
  std::vector<std::vector<int32_t>> prompts(1);
  std::vector<int32_t> warm_prompt;
  std::string err;
  if (!ids_text.empty() && !parse_ids(ids_text, &prompts[0], &err))
    return usage_error(err, kGenerateUsage);
  SamplerConfig sc;
  const bool sampling = temperature >= 0 || top_k >= 0 || top_p >= 0 || seed >= 0;
  if (sampling) {
    sc.temperature = temperature >= 0 ? static_cast<float>(temperature) : 1.0f;
    sc.top_k = top_k >= 0 ? static_cast<int32_t>(top_k) : 0;
    sc.top_p = top_p >= 0 ? static_cast<float>(top_p) : 1.0f;
    sc.seed = seed >= 0 ? static_cast<uint64_t>(seed) : 0;
  }
  if (!warm_ids_text.empty() && !parse_ids(warm_ids_text, &warm_prompt, &err))
    return usage_error(err, kGenerateUsage);
  runtime::SessionOptions so;
  err = common.session_options(&so);
  if (!err.empty()) return usage_error(err, kGenerateUsage);
  std::vector<std::string> batch_texts;
  if (batch) {
    Result<std::string> body = read_request_file(prompts_file);
    if (!body.is_ok()) return fail(body.status());
    Result<json::Value> doc = json::parse(*body, {}, prompts_file);
    if (!doc.is_ok()) return fail(doc.status());
    const json::Value* list = doc->find("prompts");
    if (list == nullptr || !list->is_array() || list->items().empty())
      return fail(Status(StatusCode::kInvalidArgument,
                         prompts_file + ": wants {\"prompts\": [TEXT, ...]} with one or more"));
    for (const json::Value& v : list->items()) {
      if (!v.is_string() || v.as_string().empty())
        return fail(Status(StatusCode::kInvalidArgument,
                           prompts_file + ": every prompt must be a non-empty string"));
      batch_texts.emplace_back(v.as_string());
    }
  }

  const Clock::time_point load_start = Clock::now();
  Decoder d;
  d.kv_type = common.kv_type;
  Status st = d.open(common.model);
  if (!st.is_ok()) return fail(st);
  if (stop_after_json && d.tokenizer == nullptr)
    return fail(Status(StatusCode::kInvalidArgument,
                       common.model + " has no GGUF tokenizer for --stop-after-json"));
  // Text -> ids as llama.cpp tokenizes (BOS per add_bos_token).
  auto encode = [&](const std::string& text, const char* flag, const char* ids_flag,
                    std::vector<int32_t>* out) {
    if (d.tokenizer == nullptr)
      return Status(StatusCode::kInvalidArgument,
                    common.model + " has no GGUF tokenizer for " + flag + "; give " + ids_flag);
    tok::EncodeOptions eo;
    eo.add_special_tokens = true;
    LAYA_RETURN_IF_ERROR(d.tokenizer->encode(text, eo, out));
    if (out->empty())
      return Status(StatusCode::kInvalidArgument, std::string(flag) + " gives no tokens");
    return Status::ok();
  };
  if (has_prompt && !(st = encode(prompt_text, "--prompt", "--ids", &prompts[0])).is_ok())
    return fail(st);
  if (batch) {
    prompts.resize(batch_texts.size());
    for (size_t i = 0; i < batch_texts.size(); ++i)
      if (!(st = encode(batch_texts[i], "a --prompts-file prompt", "--ids", &prompts[i])).is_ok())
        return fail(st);
  }
  // --chat: the message rendered with the model's template, tokenized with its special tokens;
  // the template's end-of-turn token stops generation.
  if (has_chat) {
    if (d.tokenizer == nullptr)
      return fail(Status(StatusCode::kInvalidArgument,
                         common.model + " has no GGUF tokenizer for --chat; give --ids"));
    Result<frontends::gguf::TokenizerData> td = frontends::gguf::tokenizer_data(*d.vocab);
    if (!td.is_ok()) return fail(td.status());
    const std::string_view bos_text =
        td->bos_id >= 0 && static_cast<size_t>(td->bos_id) < td->tokens.size()
            ? td->tokens[static_cast<size_t>(td->bos_id)]
            : std::string_view();
    Result<ChatTemplate> tmpl = ChatTemplate::recognize(d.chat_template, bos_text);
    if (!tmpl.is_ok()) return fail(tmpl.status());
    const ChatMessage message{"user", chat_text};
    Result<std::string> text = tmpl->render(std::span(&message, 1), true);
    if (!text.is_ok()) return fail(text.status());
    tok::EncodeOptions eo;
    eo.add_special_tokens = !tmpl->renders_bos();
    if (!(st = d.tokenizer->encode(*text, eo, &prompts[0])).is_ok()) return fail(st);
    const char* end_of_turn = tmpl->format() == ChatFormat::kChatMl ? "<|im_end|>" : "<|eot_id|>";
    const int32_t eot = d.tokenizer->token_to_id(end_of_turn);
    if (eot < 0)
      return fail(status_error(StatusCode::kInvalidArgument,
                               "%s has a %s chat template but no %s token", common.model.c_str(),
                               chat_format_name(tmpl->format()), end_of_turn));
    sc.stop_ids.push_back(eot);
  }
  if (!warm_text.empty() &&
      !(st = encode(warm_text, "--warm-prompt", "--warm-ids", &warm_prompt)).is_ok())
    return fail(st);
  // The cache holds the prompt and every new token but the last (nothing reads its logits); the
  // prefix cache's two slots hold up to the longest prompt's whole blocks each.
  int64_t longest = static_cast<int64_t>(warm_prompt.size());
  for (const std::vector<int32_t>& pr : prompts)
    longest = std::max(longest, static_cast<int64_t>(pr.size()));
  const int64_t tokens = longest + max_tokens - 1;
  constexpr int32_t kPrefixSlots = 2;
  const int64_t prefix_tokens =
      prefix_cache ? kPrefixSlots * std::max<int64_t>(1, longest / prefix_block) * prefix_block : 0;
  st = d.start(so, common.chunk, tokens, load_start, prefix_tokens,
               prefix_cache ? 1 + kPrefixSlots : 1);
  if (!st.is_ok()) return fail(st);
  std::unique_ptr<runtime::PrefixCache> pc;
  if (prefix_cache) {
    runtime::PrefixCacheOptions po;
    po.block_tokens = prefix_block;
    po.first_seq = 1;
    po.slots = kPrefixSlots;
    po.budget_bytes = static_cast<uint64_t>(prefix_tokens) * d.run.cache->layout().bytes_per_cell;
    Result<std::unique_ptr<runtime::PrefixCache>> made =
        runtime::PrefixCache::create(*d.run.cache, d.run.cache->layout(), po);
    if (!made.is_ok()) return fail(made.status());
    pc = std::move(made).value();
  }
  if (warm) {
    runtime::GenerateRequest wr;
    wr.prompt = warm_prompt;
    wr.max_tokens = 1;
    wr.prefix_cache = pc.get();
    std::vector<int32_t> dropped;
    st = d.run.runner->generate(wr, &dropped, nullptr);
    if (st.is_ok()) st = d.run.cache->remove(0);
    if (!st.is_ok()) return fail(st);
  }

  if (d.eos >= 0 && std::find(sc.stop_ids.begin(), sc.stop_ids.end(), d.eos) == sc.stop_ids.end())
    sc.stop_ids.push_back(d.eos);
  for (const std::vector<int32_t>& prompt : prompts) {
    // A fresh sampler per prompt: the same seed gives each prompt the ids it gets alone.
    Result<Sampler> sampler = Sampler::create(sc, static_cast<int32_t>(d.run.runner->vocab()));
    if (!sampler.is_ok()) return fail(sampler.status());
    std::vector<int32_t> ids;
    runtime::DecoderStats stats;
    runtime::GenerateRequest req;
    req.prompt = prompt;
    req.max_tokens = max_tokens;
    req.prefix_cache = pc.get();
    req.stop = sampler->config().stop_ids;
    req.pick = sample_token;
    req.pick_ctx = &*sampler;
    JsonEnd json_end;
    json_end.tokenizer = d.tokenizer.get();
    if (stop_after_json) {
      req.done = JsonEnd::done;
      req.done_ctx = &json_end;
    }
    NodeTimes node_times, prefill_times;
    const hal::ProfileSink sink{on_node, &node_times}, prefill_sink{on_node, &prefill_times};
    if (profile) {
      node_times.ms.assign(d.graph.nodes.size(), 0.0);
      prefill_times.ms.assign(d.graph.nodes.size(), 0.0);
      req.decode_profile = &sink;
      req.prefill_profile = &prefill_sink;
    }
    st = d.run.runner->generate(req, &ids, &stats);
    if (st.is_ok()) st = d.run.cache->remove(0);
    if (!st.is_ok()) return fail(st);
    std::string text;
    if (d.tokenizer != nullptr) {
      st = d.tokenizer->decode(ids, /*skip_special=*/true, &text);
      if (!st.is_ok()) return fail(st);
    }
    const bool stopped = std::find(req.stop.begin(), req.stop.end(), ids.back()) != req.stop.end();
    const char* finish = stopped ? "stop" : json_end.closed ? "json" : "length";
    const double total_ms = stats.token_ms.back();
    const DecodeProfile prof = decode_profile(d.graph, node_times, stats);
    const PrefillProfile pprof = prefill_profile(d.graph, prefill_times, stats);
    const int64_t prefilled = stats.prompt_tokens - stats.prefix_hit_tokens;
    if (json) {
      // Milliseconds and tokens per second to 0.1.
      auto num1 = [](double v) { return json::Value::number(std::round(v * 10.0) / 10.0); };
      json::Value t = json::Value::object();
      t.set("load_ms", num1(stats.load_ms));
      t.set("prefill_ms", num1(stats.prefill_end_ms));
      t.set("first_token_ms", num1(stats.first_token_ms));
      t.set("total_ms", num1(total_ms));
      t.set("prompt_tokens", json::Value::integer(stats.prompt_tokens));
      t.set("tokens", json::Value::integer(static_cast<int64_t>(ids.size())));
      t.set("prefill_chunks", json::Value::integer(stats.prefill_steps));
      t.set("decode_tokens_per_s", num1(stats.decode_tokens_per_s()));
      if (pc != nullptr) {
        const runtime::PrefixCacheStats& ps = pc->stats();
        json::Value c = json::Value::object();
        c.set("hit_tokens", json::Value::integer(stats.prefix_hit_tokens));
        c.set("block_tokens", json::Value::integer(pc->block_tokens()));
        c.set("lookups", json::Value::integer(ps.lookups));
        c.set("hits", json::Value::integer(ps.hits));
        c.set("misses", json::Value::integer(ps.misses));
        c.set("evictions", json::Value::integer(ps.evictions));
        c.set("cached_tokens", json::Value::integer(ps.cached_tokens));
        t.set("prefix_cache", std::move(c));
      }
      if (profile) {
        json::Value dp = json::Value::object();
        dp.set("steps", json::Value::integer(stats.decode_steps));
        dp.set("token", json::Value::number(prof.token));
        dp.set("execute", json::Value::number(prof.execute));
        dp.set("nodes", json::Value::number(prof.nodes));
        dp.set("runner", json::Value::number(prof.runner));
        dp.set("pick", json::Value::number(prof.pick));
        dp.set("other", json::Value::number(prof.other));
        dp.set("ops", json_ops(prof.ops));
        t.set("decode_profile", std::move(dp));
        json::Value pp = json::Value::object();
        pp.set("tokens", json::Value::integer(prefilled));
        pp.set("chunks", json::Value::integer(stats.prefill_steps));
        pp.set("prefill", json::Value::number(pprof.prefill));
        pp.set("execute", json::Value::number(pprof.execute));
        pp.set("nodes", json::Value::number(pprof.nodes));
        pp.set("other", json::Value::number(pprof.other));
        pp.set("ops", json_ops(pprof.ops));
        t.set("prefill_profile", std::move(pp));
      }
      json::Value out = json::Value::object();
      out.set("prompt_ids", json_ids(prompt));
      out.set("ids", json_ids(ids));
      out.set("text", json::Value::string(text));
      out.set("finish_reason", json::Value::string(finish));
      out.set("timings", std::move(t));
      print_json(out);
      std::fflush(stdout);
      continue;
    }
    std::printf("model: %s (load + import + pack %.1f ms; kernels %s)\n", common.model.c_str(),
                stats.load_ms, kernels_label(common.kernels).c_str());
    std::printf("prompt ids (%zu): %s\n", prompt.size(), id_list(prompt).c_str());
    std::string how = "greedy";
    if (!sampler->greedy()) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "sampled: temperature %g, top-k %d, top-p %g, seed %llu",
                    static_cast<double>(sc.temperature), sc.top_k, static_cast<double>(sc.top_p),
                    static_cast<unsigned long long>(sc.seed));
      how = buf;
    }
    std::printf("generated ids (%zu, %s): %s\n", ids.size(), how.c_str(), id_list(ids).c_str());
    if (d.tokenizer != nullptr) std::printf("text: %s\n", text.c_str());
    std::printf(
        "time: prefill %.1f ms (%lld tokens, %lld chunk(s) of <= %lld), first token %.1f ms, "
        "%.1f ms in all; decode %.1f tokens/s over %zu step(s)\n",
        stats.prefill_end_ms, static_cast<long long>(stats.prompt_tokens),
        static_cast<long long>(stats.prefill_steps), static_cast<long long>(d.run.runner->chunk()),
        stats.first_token_ms, total_ms, stats.decode_tokens_per_s(),
        ids.empty() ? size_t{0} : ids.size() - 1);
    if (pc != nullptr)
      std::printf(
          "prefix cache: %lld of %lld prompt tokens reused (blocks of %lld; %lld hit(s), "
          "%lld miss(es) in this process)\n",
          static_cast<long long>(stats.prefix_hit_tokens),
          static_cast<long long>(stats.prompt_tokens), static_cast<long long>(pc->block_tokens()),
          static_cast<long long>(pc->stats().hits), static_cast<long long>(pc->stats().misses));
    if (profile) {
      std::printf("prefill profile (measured, ms over %lld prompt token(s) in %lld chunk(s)):\n",
                  static_cast<long long>(prefilled), static_cast<long long>(stats.prefill_steps));
      print_profile(pprof.ops,
                    {{"(execute outside nodes)", pprof.execute - pprof.nodes},
                     {"(runner: cells, reshape)", pprof.other},
                     {"prefill", pprof.prefill}},
                    pprof.prefill);
    }
    if (profile && stats.decode_steps > 0) {
      std::printf("decode profile (measured, ms per token over %lld decode step(s)):\n",
                  static_cast<long long>(stats.decode_steps));
      print_profile(prof.ops,
                    {{"(execute outside nodes)", prof.execute - prof.nodes},
                     {"(runner: cells, reshape)", prof.runner},
                     {"(pick)", prof.pick},
                     {"(other)", prof.other},
                     {"token", prof.token}},
                    prof.token);
    }
  }
  return 0;
}

int cmd_score(int argc, char** argv) {
  DecoderOptions common;
  std::string ids_file;
  int64_t top = 5;
  bool last_only = false;
  std::vector<std::string> positional;
  ArgParser p;
  common.declare(p);
  p.text("ids-file", &ids_file);
  p.integer("top", 1, 1000000, &top);
  p.flag("last", &last_only);
  if (!p.parse(argc, argv, 2, &positional)) return usage_error(p.error(), kScoreUsage);
  if (common.help) {
    std::printf("%s", kScoreUsage);
    return 0;
  }
  if (!positional.empty())
    return usage_error("unexpected argument '" + positional[0] + "'", kScoreUsage);
  if (common.model.empty()) return usage_error("score needs --model M.gguf|M.laya", kScoreUsage);
  if (ids_file.empty()) return usage_error("score needs --ids-file F.json", kScoreUsage);
  if (top > 1000 && !last_only)
    return usage_error("--top above 1000 needs --last (one position)", kScoreUsage);
  runtime::SessionOptions so;
  const std::string err = common.session_options(&so);
  if (!err.empty()) return usage_error(err, kScoreUsage);

  Result<std::string> text = read_request_file(ids_file);
  if (!text.is_ok()) return fail(text.status());
  Result<json::Value> doc = json::parse(*text, {}, ids_file);
  if (!doc.is_ok()) return fail(doc.status());
  const json::Value* list = doc->find("ids");
  if (list == nullptr || !list->is_array() || list->items().empty())
    return fail(Status(StatusCode::kInvalidArgument,
                       ids_file + ": wants {\"ids\": [...]} with at least one id"));
  std::vector<int32_t> ids;
  for (const json::Value& v : list->items()) {
    const std::optional<int64_t> x = v.is_integer() ? v.as_int64() : std::nullopt;
    if (!x || *x < 0 || *x > INT32_MAX)
      return fail(
          Status(StatusCode::kInvalidArgument,
                 ids_file + ": ids must be integers in [0, 2147483647], got " + json::dump(v)));
    ids.push_back(static_cast<int32_t>(*x));
  }

  Decoder d;
  d.kv_type = common.kv_type;
  Status st = d.open(common.model);
  if (!st.is_ok()) return fail(st);
  st = d.start(so, common.chunk, static_cast<int64_t>(ids.size()), Clock::now());
  if (!st.is_ok()) return fail(st);
  const int64_t vocab = d.run.runner->vocab();
  const int64_t k = std::min<int64_t>(top, vocab);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  json::Value positions = json::Value::array();
  const size_t chunk = static_cast<size_t>(d.run.runner->chunk());
  for (size_t at = 0; at < ids.size(); at += chunk) {
    const size_t n = std::min(chunk, ids.size() - at);
    st = d.run.runner->step(0, std::span(ids).subspan(at, n));
    if (!st.is_ok()) return fail(st);
    for (size_t i = 0; i < n; ++i) {
      if (last_only && at + i + 1 < ids.size()) continue;
      const float* row = d.run.runner->logits().data() + i * static_cast<size_t>(vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
      });
      json::Value top_ids = json::Value::array(), top_logits = json::Value::array();
      for (int64_t j = 0; j < k; ++j) {
        top_ids.push(json::Value::integer(order[static_cast<size_t>(j)]));
        top_logits.push(json::Value::number(row[order[static_cast<size_t>(j)]]));
      }
      json::Value pos = json::Value::object();
      pos.set("top_ids", std::move(top_ids));
      pos.set("top_logits", std::move(top_logits));
      positions.push(std::move(pos));
    }
  }
  json::Value out = json::Value::object();
  out.set("positions", std::move(positions));
  print_json(out);
  return 0;
}

}  // namespace laya::tools
