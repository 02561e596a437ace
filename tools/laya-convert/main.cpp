// laya-convert: a checkpoint directory (Laya, ModernBERT / mmBERT, BERT) or a GGUF decoder (llama,
// qwen2) -> one .laya file that holds everything needed to answer: weights, tokenizer, special
// ids, decision config, chat template (GGUF), provenance.
//
//   laya-convert SRC_DIR -o OUT.laya [--dtype f32|f16|bf16|int8] [--head-dtype D]
//                [--override P=D]... [--max-rows N] [--max-tokens N] [--max-options N]
//                [--no-hash] [--quiet]
//   laya-convert MODEL.gguf -o OUT.laya [--decision-config CFG.json] [--max-chunk N]
//                [--context N] [--kv-type f32|f16] [--no-hash] [--quiet]
//
// The file is written to OUT.laya.tmp and renamed at the end; any failure (or Ctrl-C) leaves
// nothing behind. Weights stream from the memory-mapped checkpoint one chunk at a time, so the
// conversion needs little memory whatever the model's size.
// Exit codes: 0 success, 1 bad input (missing files, corrupt safetensors, wrong shapes, ...),
// 2 bad arguments.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/gguf_import.h"
#include "frontends/import.h"
#include "ir/model_file.h"
#include "tools/cli.h"

namespace {

using namespace laya;

constexpr const char* kVersion = "laya-convert 0.1.0";

constexpr const char* kUsage =
    "usage: laya-convert SRC_DIR -o OUT.laya [options]\n"
    "       laya-convert MODEL.gguf -o OUT.laya [GGUF options]\n"
    "\n"
    "Converts a checkpoint directory to a .laya model file: a Laya decision checkpoint\n"
    "(rl_agent_config.json, model.safetensors, encoder/, tokenizer/), or a Hugging Face\n"
    "ModernBERT / mmBERT / BERT encoder (config.json, safetensors, tokenizer files). The file\n"
    "embeds the tokenizer, the special token ids, the decision config and the provenance (every\n"
    "source file with its sha256), so the source directory is not needed again.\n"
    "A GGUF decoder (llama, qwen2) becomes its KV-cached graph with the weights as stored (Q4_1\n"
    "stays Q4_1), the GGUF vocabulary, the chat template and a decision config: laya-run\n"
    "generate / score / decide on the .laya give what they give on the GGUF.\n"
    "\n"
    "  -o, --output FILE    the .laya file to write (replaced atomically)\n"
    "  --dtype D            weights: f32 (default), f16, bf16, or int8 (matmul weights int8 with\n"
    "                       one scale per output row; tables 16-bit; norms and biases f32)\n"
    "  --head-dtype D       the Laya decision head (type_emb, head, scorer, act_head)\n"
    "  --override P=D       tensors whose name matches the pattern P ('*': any characters)\n"
    "                       are stored as D, e.g. 'encoder.layers.*.mlp.Wo.weight=f16';\n"
    "                       repeatable, the first match wins (over --head-dtype too)\n"
    "  --max-rows N         question rows per request (default 64)\n"
    "  --max-tokens N       packed tokens per request (default: max_len * max-rows)\n"
    "  --max-options N      options per question (default 512)\n"
    "  --no-hash            skip the sha256 of the source files\n"
    "  --quiet              no progress or summary\n"
    "\n"
    "GGUF options (the directory options above do not apply):\n"
    "  --decision-config F  decision temperatures, a JSON object: {\"temperature\": [choice,\n"
    "                       score, noul], \"temperature_by_options\": {\"choice:3-5\": T, ...}}\n"
    "                       (buckets 2, 3-5, 6-10, 11+; default 1.0 each)\n"
    "  --max-chunk N        the longest prefill chunk a session may plan (default 128)\n"
    "  --context N          KV cache cells a session may bind (default: the model's context)\n"
    "  --kv-type T          f32 | f16: the KV cache's element type, fixed in the file\n"
    "                       (default f16, as llama.cpp; f32 doubles the cache)\n"
    "\n"
    "exit codes: 0 ok, 1 bad input, 2 bad arguments\n";

// The temporary file a signal must remove (model_write's "<out>.tmp").
char g_tmp_path[4096];

void on_signal(int sig) {
  if (g_tmp_path[0] != '\0') ::unlink(g_tmp_path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

int bad_args(const std::string& msg) {
  std::fprintf(stderr, "laya-convert: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "laya-convert: %s\n", s.to_string().c_str());
  return 1;
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

struct Progress {
  bool tty = false;
  int last = -1;
};

void on_progress(void* user, uint64_t done, uint64_t total) {
  auto* p = static_cast<Progress*>(user);
  if (!p->tty || total == 0) return;
  const int pct = static_cast<int>(done * 100 / total);
  if (pct == p->last) return;
  p->last = pct;
  constexpr int kWidth = 40;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < pct * kWidth / 100 ? '#' : ' ';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\rwriting [%s] %3d%%  %s / %s", bar, pct, mib(done).c_str(),
               mib(total).c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

// A weight format option's value; kSource is not one ("--dtype" etc. name the stored format).
bool parse_format(const std::string& option, const std::string& v, frontends::WeightFormat* out,
                  std::string* err) {
  Result<frontends::WeightFormat> f = frontends::weight_format_from_name(v);
  if (!f.is_ok() || *f == frontends::WeightFormat::kSource) {
    *err = option + " must be f32, f16, bf16 or int8, not '" + v + "'";
    return false;
  }
  *out = *f;
  return true;
}

// Whether option `name` ("--dtype") is among the arguments, as "--dtype V" or "--dtype=V".
bool given(const std::vector<const char*>& args, const std::string& name) {
  for (const char* a : args)
    if (a == name || std::string_view(a).substr(0, name.size() + 1) == name + "=") return true;
  return false;
}

// A GGUF source: a name ending in ".gguf", or a regular file starting with the GGUF magic.
bool is_gguf(const std::string& src) {
  if (src.size() >= 5 && src.compare(src.size() - 5, 5, ".gguf") == 0) return true;
  struct stat st;
  if (::stat(src.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  char magic[4] = {};
  FILE* f = std::fopen(src.c_str(), "rb");
  if (f == nullptr) return false;
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

// Writes `g` to `out` atomically, reads it back through the loader's checks and prints a summary.
// Exit code: 0, or 1 with nothing left behind.
int write_model(const ir::Graph& g, const std::string& out, bool quiet,
                std::chrono::steady_clock::time_point t0) {
  const std::string tmp = out + ".tmp";
  if (tmp.size() < sizeof g_tmp_path) std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
  Progress progress;
  progress.tty = !quiet && ::isatty(STDERR_FILENO);
  ir::WriteOptions wo;
  wo.progress = on_progress;
  wo.user = &progress;
  Status s = ir::model_write(g, out, wo);
  if (!s.is_ok()) return fail(s);
  // Read it back: the loader's checks (FlatBuffers verifier, every extent, the graph verifier).
  Result<ir::Graph> back = ir::model_load(out);
  if (!back.is_ok()) {
    ::unlink(out.c_str());
    return fail(back.status());
  }
  g_tmp_path[0] = '\0';
  if (!quiet) {
    const ir::WeightStats ws = ir::graph_weight_stats(*back);
    uint64_t total = 0;
    std::string by;
    for (size_t d = 0; d < static_cast<size_t>(ir::DType::kCount); ++d)
      if (ws.bytes_by_dtype[d] > 0) {
        total += ws.bytes_by_dtype[d];
        by += std::string(by.empty() ? "" : ", ") + ir::dtype_name(static_cast<ir::DType>(d)) +
              " " + mib(ws.bytes_by_dtype[d]);
      }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "wrote %s: %s, %lld parameters, weights %s (%s), %.1f s\n", out.c_str(),
                 back->meta.architecture.c_str(), static_cast<long long>(ws.params),
                 mib(total).c_str(), by.c_str(), secs);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  frontends::ImportOptions opts;
  opts.format = frontends::WeightFormat::kF32;
  opts.converter_version = kVersion;
  bool help = false, quiet = false, no_hash = false;
  std::string out, dtype, head_dtype;
  std::vector<std::string> override_specs, positional;
  tools::ArgParser p;
  p.flag("help", &help);
  p.text("output", &out);
  p.text("dtype", &dtype);
  p.text("head-dtype", &head_dtype);
  p.repeated("override", &override_specs);
  p.integer("max-rows", 1, INT32_MAX, &opts.max_rows);
  p.integer("max-tokens", 1, INT32_MAX, &opts.max_tokens);
  p.integer("max-options", 1, INT32_MAX, &opts.max_options);
  p.flag("no-hash", &no_hash);
  p.flag("quiet", &quiet);
  // "-o" is "--output" (the parser itself knows only "-h").
  std::vector<const char*> args(argv, argv + argc);
  for (const char*& a : args)
    if (std::strcmp(a, "-o") == 0) a = "--output";
  std::string decision_config;
  int64_t max_chunk = 128, context = 0;
  std::string kv_type;
  p.text("decision-config", &decision_config);
  p.choice("kv-type", {"f32", "f16"}, &kv_type);
  p.integer("max-chunk", 1, 1 << 20, &max_chunk);
  p.integer("context", 1, INT32_MAX, &context);
  if (!p.parse(argc, args.data(), 1, &positional)) return bad_args(p.error());
  if (help) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (positional.empty()) return bad_args("no source directory");
  if (positional.size() > 1)
    return bad_args("one source directory only (got '" + positional[0] + "' and '" + positional[1] +
                    "')");
  const std::string src = positional[0];
  if (out.empty()) return bad_args("no output file (-o OUT.laya)");
  opts.hash_sources = !no_hash;
  const bool gguf = is_gguf(src);
  if (gguf) {
    for (const char* o :
         {"--dtype", "--head-dtype", "--override", "--max-rows", "--max-tokens", "--max-options"})
      if (given(args, o))
        return bad_args(std::string(o) +
                        " does not apply to a GGUF file (its weights are kept as stored)");
    frontends::gguf::GgufImportOptions go;
    go.max_chunk = max_chunk;
    go.max_cells = context;
    if (kv_type == "f32") go.kv_dtype = ir::DType::kF32;
    go.hash_source = !no_hash;
    go.converter_version = kVersion;
    if (!decision_config.empty()) {
      Result<ir::DecisionConfig> dc = frontends::gguf::read_decision_config(decision_config);
      if (!dc.is_ok()) return fail(dc.status());
      go.decision = std::move(dc).value();
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (!quiet) std::fprintf(stderr, "reading GGUF %s (weights kept as stored)...\n", src.c_str());
    Result<ir::Graph> g = frontends::gguf::import_gguf(src, go);
    if (!g.is_ok()) return fail(g.status());
    return write_model(*g, out, quiet, t0);
  }
  for (const char* o : {"--decision-config", "--max-chunk", "--context", "--kv-type"})
    if (given(args, o))
      return bad_args(std::string(o) + " applies to a GGUF file only (a checkpoint directory's " +
                      "decision config is its rl_agent_config.json)");
  std::string err;
  if (!dtype.empty() && !parse_format("--dtype", dtype, &opts.format, &err)) return bad_args(err);
  // Explicit overrides first (the first match wins), then the head's.
  for (const std::string& spec : override_specs) {
    Result<frontends::FormatOverride> r = frontends::parse_format_override(spec);
    if (!r.is_ok()) return bad_args(std::string("--override: ") + r.status().message());
    if (r->format == frontends::WeightFormat::kSource)
      return bad_args("--override must store f32, f16, bf16 or int8, not '" + spec + "'");
    opts.overrides.push_back(*r);
  }
  if (!head_dtype.empty()) {
    frontends::WeightFormat h{};
    if (!parse_format("--head-dtype", head_dtype, &h, &err)) return bad_args(err);
    for (const char* pattern : frontends::kLayaHeadPatterns) opts.overrides.push_back({pattern, h});
  }

  const auto t0 = std::chrono::steady_clock::now();
  Result<frontends::CheckpointKind> kind = frontends::detect_checkpoint(src);
  if (!kind.is_ok()) return fail(kind.status());
  if (!quiet)
    std::fprintf(stderr, "reading %s checkpoint %s (%s weights)...\n",
                 frontends::checkpoint_kind_name(*kind), src.c_str(),
                 frontends::weight_format_name(opts.format));
  Result<ir::Graph> g = frontends::import_checkpoint(src, opts);
  if (!g.is_ok()) return fail(g.status());

  return write_model(*g, out, quiet, t0);
}
