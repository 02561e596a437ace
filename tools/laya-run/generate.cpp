// laya-run generate / score: a decoder (a GGUF file, or a .laya decoder over a KV cache) through
// the C API (laya_generate, laya_score): the prompt prefilled in chunks, then one decode step per
// new token.
//
//   laya-run generate --model M (--prompt TEXT | --chat TEXT [--system TEXT] | --messages F
//                     | --ids 1,2,3 | --prompts-file F)
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

#include "include/laya/laya.h"
#include "kernels/kernels.h"
#include "runtime/text/json.h"
#include "tools/cli.h"
#include "tools/laya-run/capi.h"
#include "tools/laya-run/commands.h"

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
    "  --system TEXT    with --chat: a system message before it (instead of the template's\n"
    "                   default system prompt)\n"
    "  --messages F     a chat from a JSON file {\"messages\": [{\"role\", \"content\"}, ...]}\n"
    "                   (\"-\": stdin), rendered like --chat\n"
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
  std::string kv_type;  // "" = the model's default

  void declare(ArgParser& p) {
    p.flag("help", &help);
    p.text("model", &model);
    p.choice("kv-type", {"f32", "f16"}, &kv_type);
    p.choice("kernels", kernels::kernel_table_names(), &kernels);
    p.text("backends", &backends);
    p.integer("threads", 0, 1024, &threads);
    p.integer("chunk", 1, 4096, &chunk);
  }
  // "" or the message of a bad --backends list.
  std::string check() const {
    std::vector<std::string> list;
    std::string err;
    return split_list(backends, "--backends", &list, &err) ? "" : err;
  }
  CapiModelOptions model_options() const {
    CapiModelOptions o;
    o.backends = backends;
    o.kernels = kernels;
    o.kv_type = kv_type;
    o.threads = static_cast<int>(threads);
    return o;
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

std::string id_list(const int32_t* v, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (out.empty() ? "" : ", ") + std::to_string(v[i]);
  return out;
}

// Per-kind times of the prefill (phase 0) and of the decode steps (phase 1), as the C API's
// profile callback reports them, in first-seen order.
struct Profile {
  std::vector<std::pair<std::string, double>> kinds[2];
  static void on_node(void* user, int32_t phase, const char* node, double ms) {
    auto& rows = static_cast<Profile*>(user)->kinds[phase == 0 ? 0 : 1];
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == node; });
    if (it == rows.end())
      rows.emplace_back(node, ms);
    else
      it->second += ms;
  }
};

// Rows (kind, ms / n) largest first, and their sum.
std::vector<std::pair<std::string, double>> op_rows(
    const std::vector<std::pair<std::string, double>>& in, double n, double* sum) {
  std::vector<std::pair<std::string, double>> rows = in;
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

DecodeProfile decode_profile(const Profile& prof, const laya_generation& g) {
  DecodeProfile p;
  if (g.decode_steps == 0) return p;
  const double n = static_cast<double>(g.decode_steps);
  p.ops = op_rows(prof.kinds[1], n, &p.nodes);
  p.execute = g.decode_execute_ms / n;
  p.runner = (g.decode_step_ms - g.decode_execute_ms) / n;
  p.pick = g.decode_pick_ms / n;
  // A decode step and its pick from one token's time to the next.
  p.token = (g.total_ms - g.first_token_ms) / n;
  p.other = p.token - g.decode_step_ms / n - p.pick;
  return p;
}

// The prefill profile, ms over the whole prefill (all its chunks).
struct PrefillProfile {
  std::vector<std::pair<std::string, double>> ops;
  double execute = 0, nodes = 0, other = 0, prefill = 0;
};

PrefillProfile prefill_profile(const Profile& prof, const laya_generation& g) {
  PrefillProfile p;
  p.ops = op_rows(prof.kinds[0], 1.0, &p.nodes);
  p.execute = g.prefill_execute_ms;
  p.prefill = g.prefill_ms;
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

json::Value json_ids(const int32_t* v, size_t n) {
  json::Value a = json::Value::array();
  for (size_t i = 0; i < n; ++i) a.push(json::Value::integer(v[i]));
  return a;
}

std::string kernels_label(const std::string& k) {
  if (k != "auto") return k;
  return std::string("auto = ") +
         kernels::kernel_target_name(kernels::kernel_hwy_targets().front());
}

// {"messages": [{"role", "content"}, ...]} from a file.
Status read_messages(const std::string& path,
                     std::vector<std::pair<std::string, std::string>>* out) {
  LAYA_ASSIGN_OR_RETURN(std::string body, read_request_file(path));
  LAYA_ASSIGN_OR_RETURN(json::Value doc, json::parse(body, {}, path));
  const json::Value* list = doc.find("messages");
  if (list == nullptr || !list->is_array() || list->items().empty())
    return Status(StatusCode::kInvalidArgument,
                  path + ": wants {\"messages\": [{\"role\": ..., \"content\": ...}, ...]}");
  for (const json::Value& m : list->items()) {
    const json::Value* role = m.find("role");
    const json::Value* content = m.find("content");
    if (role == nullptr || !role->is_string() || content == nullptr || !content->is_string())
      return Status(StatusCode::kInvalidArgument,
                    path + ": every message needs a string \"role\" and \"content\"");
    out->emplace_back(role->as_string(), content->as_string());
  }
  return Status::ok();
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  DecoderOptions common;
  bool json = false, stop_after_json = false;
  bool prefix_cache = false;
  bool profile = false;
  std::string prompt_text, chat_text, system_text, messages_file, ids_text, prompts_file, warm_text,
      warm_ids_text;
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
  p.text("system", &system_text);
  p.text("messages", &messages_file);
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
  const bool has_messages = !messages_file.empty();
  const bool batch = !prompts_file.empty();
  if (has_prompt + has_chat + has_messages + !ids_text.empty() + batch != 1)
    return usage_error(
        "generate needs one of --prompt TEXT, --chat TEXT, --messages F, --ids ID,ID,... or "
        "--prompts-file F",
        kGenerateUsage);
  if (!system_text.empty() && !has_chat)
    return usage_error("--system goes with --chat (a --messages file carries its own)",
                       kGenerateUsage);
  if (!warm_text.empty() && !warm_ids_text.empty())
    return usage_error("give one of --warm-prompt TEXT or --warm-ids ID,ID,...", kGenerateUsage);
  const bool warm = !warm_text.empty() || !warm_ids_text.empty();
  if (batch && (!json || warm))
    return usage_error("--prompts-file needs --json and takes no --warm-prompt / --warm-ids",
                       kGenerateUsage);
  prefix_cache = prefix_cache || warm || batch;
  std::vector<int32_t> ids_prompt, warm_ids;
  std::string err;
  if (!ids_text.empty() && !parse_ids(ids_text, &ids_prompt, &err))
    return usage_error(err, kGenerateUsage);
  if (!warm_ids_text.empty() && !parse_ids(warm_ids_text, &warm_ids, &err))
    return usage_error(err, kGenerateUsage);
  laya_sampling sampling = {};
  const bool sampling_given = temperature >= 0 || top_k >= 0 || top_p >= 0 || seed >= 0;
  if (sampling_given) {
    sampling.temperature = temperature >= 0 ? static_cast<float>(temperature) : 1.0f;
    sampling.top_k = top_k >= 0 ? static_cast<int32_t>(top_k) : 0;
    sampling.top_p = top_p >= 0 ? static_cast<float>(top_p) : 1.0f;
    sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : 0;
  }
  err = common.check();
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
  std::vector<std::pair<std::string, std::string>> chat;
  if (has_chat) {
    if (!system_text.empty()) chat.emplace_back("system", system_text);
    chat.emplace_back("user", chat_text);
  }
  if (has_messages)
    if (Status st = read_messages(messages_file, &chat); !st.is_ok()) return fail(st);

  CapiModel model;
  if (CapiError e = model.open(common.model, common.model_options()); !e.ok()) return report(e);
  const laya_model_info info = model.info();
  if (info.kind != LAYA_MODEL_DECODER)
    return fail(
        Status(StatusCode::kInvalidArgument,
               common.model + " is not a decoder over a KV cache (it has no state values)"));
  // The KV cache holds the longest prompt and every new token but the last (nothing reads its
  // logits). A prompt's tokens are at most its bytes (plus the template's and BOS).
  int64_t longest = std::max<int64_t>(static_cast<int64_t>(ids_prompt.size()),
                                      static_cast<int64_t>(warm_ids.size()));
  auto bytes_bound = [](size_t bytes) { return static_cast<int64_t>(bytes) + 64; };
  longest = std::max(longest, bytes_bound(prompt_text.size()));
  longest = std::max(longest, bytes_bound(warm_text.size()));
  for (const std::string& t : batch_texts) longest = std::max(longest, bytes_bound(t.size()));
  size_t chat_bytes = 0;
  for (const auto& [role, content] : chat) chat_bytes += role.size() + content.size() + 32;
  if (!chat.empty()) longest = std::max(longest, bytes_bound(chat_bytes + 512));
  laya_context_limits lim = laya_context_default_limits();
  lim.kv_cells = std::min<int64_t>(longest + max_tokens - 1, info.max_tokens);
  lim.chunk = common.chunk;
  lim.prefix_slots = 2;
  lim.prefix_block = prefix_block;
  lim.prefix_cache_bytes = 0;
  CapiContext ctx;
  if (CapiError e = ctx.create(model.get(), lim); !e.ok()) return report(e);

  laya_generate_params gp = laya_generate_params_init();
  gp.no_prefix_cache = prefix_cache ? 0 : 1;
  if (warm) {
    laya_generate_params wp = gp;
    wp.max_tokens = 1;
    if (!warm_text.empty()) wp.prompt = warm_text.c_str();
    wp.prompt_ids = warm_ids.empty() ? nullptr : warm_ids.data();
    wp.n_prompt_ids = warm_ids.size();
    if (laya_status s = laya_generate(ctx.get(), &wp, nullptr, 0, nullptr); s != LAYA_OK)
      return report(ctx.error(s));
  }
  std::vector<laya_message> messages;
  for (const auto& [role, content] : chat) messages.push_back({role.c_str(), content.c_str()});
  const size_t n_prompts = batch ? batch_texts.size() : 1;
  for (size_t pi = 0; pi < n_prompts; ++pi) {
    gp.max_tokens = max_tokens;
    gp.sampling = sampling;
    gp.stop_after_json = stop_after_json ? 1 : 0;
    gp.prompt = batch ? batch_texts[pi].c_str() : has_prompt ? prompt_text.c_str() : nullptr;
    gp.messages = messages.empty() ? nullptr : messages.data();
    gp.n_messages = messages.size();
    gp.prompt_ids = ids_prompt.empty() ? nullptr : ids_prompt.data();
    gp.n_prompt_ids = ids_prompt.size();
    Profile prof;
    if (profile) {
      gp.profile = Profile::on_node;
      gp.profile_user = &prof;
    }
    size_t n = 0;
    laya_status s = laya_generate(ctx.get(), &gp, nullptr, 0, &n);
    if (s != LAYA_OK) return report(ctx.error(s));
    std::string text(n + 1, '\0');
    if ((s = laya_result_text(ctx.get(), text.data(), text.size(), &n)) != LAYA_OK)
      return report(ctx.error(s));
    text.resize(n);
    laya_generation g = laya_generation_init();
    if ((s = laya_result_generation(ctx.get(), &g)) != LAYA_OK) return report(ctx.error(s));
    const DecodeProfile dprof = decode_profile(prof, g);
    const PrefillProfile pprof = prefill_profile(prof, g);
    const int64_t prefilled = static_cast<int64_t>(g.n_prompt_ids) - g.prefix_hit_tokens;
    if (json) {
      // Milliseconds and tokens per second to 0.1.
      auto num1 = [](double v) { return json::Value::number(std::round(v * 10.0) / 10.0); };
      json::Value t = json::Value::object();
      t.set("load_ms", num1(g.load_ms));
      t.set("prefill_ms", num1(g.prefill_ms));
      t.set("first_token_ms", num1(g.first_token_ms));
      t.set("total_ms", num1(g.total_ms));
      t.set("prompt_tokens", json::Value::integer(static_cast<int64_t>(g.n_prompt_ids)));
      t.set("tokens", json::Value::integer(static_cast<int64_t>(g.n_ids)));
      t.set("prefill_chunks", json::Value::integer(g.prefill_chunks));
      t.set("decode_tokens_per_s", num1(g.decode_tokens_per_s));
      if (prefix_cache) {
        json::Value c = json::Value::object();
        c.set("hit_tokens", json::Value::integer(g.prefix_hit_tokens));
        c.set("block_tokens", json::Value::integer(g.prefix_block_tokens));
        c.set("lookups", json::Value::integer(g.prefix_lookups));
        c.set("hits", json::Value::integer(g.prefix_hits));
        c.set("misses", json::Value::integer(g.prefix_misses));
        c.set("evictions", json::Value::integer(g.prefix_evictions));
        c.set("cached_tokens", json::Value::integer(g.prefix_cached_tokens));
        t.set("prefix_cache", std::move(c));
      }
      if (profile) {
        json::Value dp = json::Value::object();
        dp.set("steps", json::Value::integer(g.decode_steps));
        dp.set("token", json::Value::number(dprof.token));
        dp.set("execute", json::Value::number(dprof.execute));
        dp.set("nodes", json::Value::number(dprof.nodes));
        dp.set("runner", json::Value::number(dprof.runner));
        dp.set("pick", json::Value::number(dprof.pick));
        dp.set("other", json::Value::number(dprof.other));
        dp.set("ops", json_ops(dprof.ops));
        t.set("decode_profile", std::move(dp));
        json::Value pp = json::Value::object();
        pp.set("tokens", json::Value::integer(prefilled));
        pp.set("chunks", json::Value::integer(g.prefill_chunks));
        pp.set("prefill", json::Value::number(pprof.prefill));
        pp.set("execute", json::Value::number(pprof.execute));
        pp.set("nodes", json::Value::number(pprof.nodes));
        pp.set("other", json::Value::number(pprof.other));
        pp.set("ops", json_ops(pprof.ops));
        t.set("prefill_profile", std::move(pp));
      }
      json::Value out = json::Value::object();
      out.set("prompt_ids", json_ids(g.prompt_ids, g.n_prompt_ids));
      out.set("ids", json_ids(g.ids, g.n_ids));
      out.set("text", json::Value::string(text));
      out.set("finish_reason", json::Value::string(g.finish_reason));
      out.set("timings", std::move(t));
      print_json(out);
      std::fflush(stdout);
      continue;
    }
    std::printf("model: %s (load + import + pack %.1f ms; kernels %s)\n", common.model.c_str(),
                g.load_ms, kernels_label(common.kernels).c_str());
    std::printf("prompt ids (%zu): %s\n", g.n_prompt_ids,
                id_list(g.prompt_ids, g.n_prompt_ids).c_str());
    std::string how = "greedy";
    if (sampling_given && sampling.temperature > 0) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "sampled: temperature %g, top-k %d, top-p %g, seed %llu",
                    static_cast<double>(sampling.temperature), sampling.top_k,
                    static_cast<double>(sampling.top_p),
                    static_cast<unsigned long long>(sampling.seed));
      how = buf;
    }
    std::printf("generated ids (%zu, %s): %s\n", g.n_ids, how.c_str(),
                id_list(g.ids, g.n_ids).c_str());
    std::printf("text: %s\n", text.c_str());
    std::printf(
        "time: prefill %.1f ms (%zu tokens, %lld chunk(s) of <= %lld), first token %.1f ms, "
        "%.1f ms in all; decode %.1f tokens/s over %zu step(s)\n",
        g.prefill_ms, g.n_prompt_ids, static_cast<long long>(g.prefill_chunks),
        static_cast<long long>(ctx.limits().chunk), g.first_token_ms, g.total_ms,
        g.decode_tokens_per_s, g.n_ids == 0 ? size_t{0} : g.n_ids - 1);
    if (prefix_cache)
      std::printf(
          "prefix cache: %lld of %zu prompt tokens reused (blocks of %lld; %lld hit(s), "
          "%lld miss(es) in this process)\n",
          static_cast<long long>(g.prefix_hit_tokens), g.n_prompt_ids,
          static_cast<long long>(g.prefix_block_tokens), static_cast<long long>(g.prefix_hits),
          static_cast<long long>(g.prefix_misses));
    if (profile) {
      std::printf("prefill profile (measured, ms over %lld prompt token(s) in %lld chunk(s)):\n",
                  static_cast<long long>(prefilled), static_cast<long long>(g.prefill_chunks));
      print_profile(pprof.ops,
                    {{"(execute outside nodes)", pprof.execute - pprof.nodes},
                     {"(runner: cells, reshape)", pprof.other},
                     {"prefill", pprof.prefill}},
                    pprof.prefill);
    }
    if (profile && g.decode_steps > 0) {
      std::printf("decode profile (measured, ms per token over %lld decode step(s)):\n",
                  static_cast<long long>(g.decode_steps));
      print_profile(dprof.ops,
                    {{"(execute outside nodes)", dprof.execute - dprof.nodes},
                     {"(runner: cells, reshape)", dprof.runner},
                     {"(pick)", dprof.pick},
                     {"(other)", dprof.other},
                     {"token", dprof.token}},
                    dprof.token);
    }
  }
  return 0;
}

namespace {

// laya_score's callback: the top-K of each position (or the last one's).
struct TopK {
  int64_t k = 5;
  bool last_only = false;
  size_t n = 0;
  std::vector<int32_t> order;
  json::Value positions = json::Value::array();
  static void on_logits(void* user, size_t position, const float* row, size_t vocab) {
    TopK& t = *static_cast<TopK*>(user);
    if (t.last_only && position + 1 < t.n) return;
    const int64_t k = std::min<int64_t>(t.k, static_cast<int64_t>(vocab));
    t.order.resize(vocab);
    std::iota(t.order.begin(), t.order.end(), 0);
    std::partial_sort(
        t.order.begin(), t.order.begin() + k, t.order.end(),
        [row](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    json::Value top_ids = json::Value::array(), top_logits = json::Value::array();
    for (int64_t j = 0; j < k; ++j) {
      top_ids.push(json::Value::integer(t.order[static_cast<size_t>(j)]));
      top_logits.push(json::Value::number(row[t.order[static_cast<size_t>(j)]]));
    }
    json::Value pos = json::Value::object();
    pos.set("top_ids", std::move(top_ids));
    pos.set("top_logits", std::move(top_logits));
    t.positions.push(std::move(pos));
  }
};

}  // namespace

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
  const std::string err = common.check();
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

  CapiModel model;
  if (CapiError e = model.open(common.model, common.model_options()); !e.ok()) return report(e);
  if (model.info().kind != LAYA_MODEL_DECODER)
    return fail(
        Status(StatusCode::kInvalidArgument,
               common.model + " is not a decoder over a KV cache (it has no state values)"));
  laya_context_limits lim = laya_context_default_limits();
  lim.kv_cells = static_cast<int64_t>(ids.size());
  lim.chunk = common.chunk;
  lim.prefix_slots = 1;
  lim.prefix_cache_bytes = 1;  // the smallest: scoring stores no prefix
  CapiContext ctx;
  if (CapiError e = ctx.create(model.get(), lim); !e.ok()) return report(e);
  TopK t;
  t.k = top;
  t.last_only = last_only;
  t.n = ids.size();
  if (laya_status s = laya_score(ctx.get(), ids.data(), ids.size(), TopK::on_logits, &t);
      s != LAYA_OK)
    return report(ctx.error(s));
  json::Value out = json::Value::object();
  out.set("positions", std::move(t.positions));
  print_json(out);
  return 0;
}

}  // namespace laya::tools
