#include "runtime/decisions/model.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include <unistd.h>

#include "frontends/gguf_decoder.h"
#include "frontends/gguf_import.h"
#include "frontends/gguf_tokenizer.h"
#include "ir/arena.h"
#include "ir/file_io.h"
#include "ir/model_file.h"
#include "runtime/decisions/encoder.h"
#include "runtime/decisions/model_tokenizer.h"
#include "runtime/text/chat_template.h"

namespace laya::decision {

namespace {

// The longest prefill chunk a GGUF decoder's graph allows (a context plans only what it binds).
constexpr int64_t kMaxChunk = 4096;

const std::string* property(const ir::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.meta.properties)
    if (k == key) return &v;
  return nullptr;
}

std::string basename_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  while (!b.empty() && b.back() == '/') b.pop_back();
  const size_t dot = b.find_last_of('.');
  if (dot != std::string::npos && dot > 0) b.resize(dot);
  return b;
}

bool is_gguf(const uint8_t* data, uint64_t size) {
  return size >= 4 && std::memcmp(data, "GGUF", 4) == 0;
}

Status with_path(const std::string& path, const Status& s) {
  if (path.empty() || std::string_view(s.message()).find(path) != std::string_view::npos) return s;
  return Status(s.code(), path + ": " + s.message());
}

// The token the template writes right after an assistant message's content (the end of the
// turn), if the vocabulary has it as one special token: -1 otherwise.
int32_t end_of_turn_token(const ChatTemplate& chat, const tok::Tokenizer& tok) {
  static constexpr char kSentinel[] = "\x01\x02\x01";
  const ChatMessage messages[2] = {{"user", "x"}, {"assistant", kSentinel}};
  Result<std::string> text = chat.render(messages, false);
  if (!text.is_ok()) return -1;
  const size_t at = text->find(kSentinel);
  if (at == std::string::npos) return -1;
  const std::string_view rest = std::string_view(*text).substr(at + sizeof(kSentinel) - 1);
  std::vector<int32_t> ids;
  if (rest.empty() || !tok.encode(rest, {}, &ids).is_ok() || ids.empty()) return -1;
  return tok.is_added(ids[0]) ? ids[0] : -1;
}

}  // namespace

Model::~Model() = default;

const tok::Tokenizer& Model::encoder_tokenizer() const {
  return *encoder_->tokenizer();
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::shared_ptr<const Model>> Model::open_file(const std::string& path,
                                                      const ModelOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  // Read the magic first: a GGUF is mapped by its own reader.
  uint8_t magic[4] = {};
  {
    LAYA_ASSIGN_OR_RETURN(ir::ReadFile f, ir::ReadFile::open(path));
    if (f.size() >= 4 && ::pread(f.fd(), magic, 4, 0) != 4)
      return status_error(StatusCode::kIoError, "cannot read '%s'", path.c_str());
  }
  if (is_gguf(magic, 4)) {
    LAYA_ASSIGN_OR_RETURN(frontends::gguf::File file, frontends::gguf::File::open(path));
    std::shared_ptr<Model> m(new Model());
    m->opts_ = opts;
    LAYA_RETURN_IF_ERROR(
        m->init_decoder(std::make_shared<const frontends::gguf::File>(std::move(file))));
    m->fill_info(path, "gguf");
    m->info_.open_ms = ms_since(t0);
    return std::shared_ptr<const Model>(std::move(m));
  }
  ir::LoadOptions lo;
  lo.verify_tables = opts.verify;
  LAYA_ASSIGN_OR_RETURN(ir::Graph g, ir::model_load(path, lo));
  std::shared_ptr<Model> m(new Model());
  m->opts_ = opts;
  m->graph_ = std::move(g);
  const Status st = m->graph_.states.empty() ? m->init_encoder() : m->init_decoder(nullptr);
  if (!st.is_ok()) return with_path(path, st);
  m->fill_info(path, "laya");
  m->info_.open_ms = ms_since(t0);
  return std::shared_ptr<const Model>(std::move(m));
}

Result<std::shared_ptr<const Model>> Model::open_memory(const void* data, uint64_t size,
                                                        const ModelOptions& opts,
                                                        std::shared_ptr<const void> owner) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (bytes == nullptr || size == 0)
    return Status(StatusCode::kFileEmpty, "the model image is empty");
  std::shared_ptr<Model> m(new Model());
  m->opts_ = opts;
  if (is_gguf(bytes, size)) {
    LAYA_ASSIGN_OR_RETURN(frontends::gguf::File file, frontends::gguf::File::parse(bytes, size));
    LAYA_RETURN_IF_ERROR(
        m->init_decoder(std::make_shared<const frontends::gguf::File>(std::move(file))));
    if (owner) m->graph_.keepalive.push_back(std::move(owner));
    m->fill_info("", "gguf");
    m->info_.open_ms = ms_since(t0);
    return std::shared_ptr<const Model>(std::move(m));
  }
  ir::LoadOptions lo;
  lo.verify_tables = opts.verify;
  LAYA_ASSIGN_OR_RETURN(m->graph_, ir::model_parse(bytes, size, std::move(owner), lo));
  LAYA_RETURN_IF_ERROR(m->graph_.states.empty() ? m->init_encoder() : m->init_decoder(nullptr));
  m->fill_info("", "laya");
  m->info_.open_ms = ms_since(t0);
  return std::shared_ptr<const Model>(std::move(m));
}

Status Model::init_encoder() {
  kind_ = ModelKind::kEncoder;
  if (graph_.meta.architecture != "laya")
    return status_error(StatusCode::kInvalidArgument,
                        "not a Laya decision model (architecture '%s') nor a decoder over a KV "
                        "cache; convert a Laya checkpoint with laya-convert",
                        graph_.meta.architecture.c_str());
  if (!graph_.meta.decision.present)
    return Status(StatusCode::kInvalidArgument, "the model has no decision config");
  if (const std::string* layout = property(graph_, "laya.option_layout");
      layout && !layout->empty() && *layout != "sequential")
    return status_error(StatusCode::kUnsupported,
                        "option_layout '%s' is not supported (only 'sequential', the layout every "
                        "published checkpoint was trained on)",
                        layout->c_str());
  LAYA_RETURN_IF_ERROR(encoder_graph_contract(graph_).status());
  LAYA_ASSIGN_OR_RETURN(ModelTokenizer t, model_tokenizer(graph_));
  encoder_ = std::move(t.encoder);
  specials_ = std::move(t.specials);
  const ir::DecisionConfig& dc = graph_.meta.decision;
  settings_.max_len = dc.max_len > 0 ? dc.max_len : 512;
  settings_.head_max_len = dc.head_max_len > 0 ? dc.head_max_len : 192;
  settings_.temperatures = model_temperatures(graph_.meta);
  temps_ = settings_.temperatures;
  LAYA_ASSIGN_OR_RETURN(device_, runtime::Device::create({opts_.n_threads, true}));
  return Status::ok();
}

Status Model::init_decoder(std::shared_ptr<const frontends::gguf::File> gguf) {
  kind_ = ModelKind::kDecoder;
  if (gguf != nullptr) {
    frontends::gguf::CachedDecoderGraphOptions o;
    LAYA_ASSIGN_OR_RETURN(frontends::gguf::DecoderParams p, frontends::gguf::decoder_params(*gguf));
    o.max_seq = kMaxChunk;
    o.max_cells = p.context_length;
    if (!opts_.kv_type.empty()) {
      LAYA_ASSIGN_OR_RETURN(o.kv_dtype, ir::dtype_from_name(opts_.kv_type));
    }
    LAYA_ASSIGN_OR_RETURN(graph_, frontends::gguf::build_cached_decoder_graph(gguf, o));
    vocab_.file = gguf;
    if (Result<std::string_view> t = gguf->get_string("tokenizer.chat_template"); t.is_ok())
      vocab_.chat_template = std::string(*t);
  } else {
    if (!opts_.kv_type.empty() &&
        opts_.kv_type != ir::dtype_name(graph_.values[graph_.states[0]].dtype))
      return status_error(StatusCode::kInvalidArgument,
                          "the model stores a %s KV cache (fixed by laya-convert --kv-type); "
                          "kv_type %s needs a file converted with it",
                          ir::dtype_name(graph_.values[graph_.states[0]].dtype),
                          opts_.kv_type.c_str());
    if (graph_.meta.tokenizer_kind == frontends::gguf::kGgufTokenizerKind) {
      LAYA_ASSIGN_OR_RETURN(vocab_.file, frontends::gguf::embedded_vocab(graph_));
    } else {
      vocab_status_ = status_error(StatusCode::kUnsupported,
                                   "the decoder carries no vocabulary this build reads (tokenizer "
                                   "kind '%s'; laya-convert MODEL.gguf embeds its GGUF "
                                   "vocabulary): it generates from token ids only",
                                   graph_.meta.tokenizer_kind.c_str());
    }
    vocab_.chat_template = graph_.meta.chat_template;
  }
  if (graph_.find_symbol("seq") < 0 || graph_.find_symbol("cells") < 0)
    return Status(StatusCode::kInvalidArgument,
                  "not a KV-cached decoder graph (no symbols seq and cells)");
  temps_ = model_temperatures(graph_.meta);
  LAYA_ASSIGN_OR_RETURN(device_, runtime::Device::create({opts_.n_threads, true}));
  if (vocab_.file == nullptr) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(vocab_.tokenizer, frontends::gguf::gguf_tokenizer(*vocab_.file));
  LAYA_ASSIGN_OR_RETURN(frontends::gguf::TokenizerData td,
                        frontends::gguf::tokenizer_data(*vocab_.file));
  vocab_.eos = static_cast<int32_t>(td.eos_id);
  text_.tokenizer = vocab_.tokenizer.get();
  std::string_view bos_text;
  if (td.bos_id >= 0 && static_cast<size_t>(td.bos_id) < td.tokens.size())
    bos_text = td.tokens[static_cast<size_t>(td.bos_id)];
  Result<ChatTemplate> chat = ChatTemplate::recognize(vocab_.chat_template, bos_text);
  if (chat.is_ok()) {
    text_.chat = *chat;
    text_.add_bos = !chat->renders_bos();
    vocab_.end_of_turn = end_of_turn_token(*chat, *vocab_.tokenizer);
    has_chat_ = true;
  } else {
    chat_status_ = chat.status();
  }
  if (vocab_.end_of_turn >= 0) text_.stop_ids.push_back(vocab_.end_of_turn);
  if (vocab_.eos >= 0 && vocab_.eos != vocab_.end_of_turn) text_.stop_ids.push_back(vocab_.eos);
  const ir::Value& logits = graph_.values[graph_.outputs.at(0)];
  const int64_t vocab = logits.shape.rank > 0 ? logits.shape.dims[logits.shape.rank - 1].c : 0;
  if (vocab <= 0)
    return Status(StatusCode::kInvalidArgument, "the decoder's logits have no fixed vocabulary");
  {
    mem::Scope heap(nullptr);  // model-lifetime tables
    LAYA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::TokenVocab> tv,
                          runtime::decoder_token_vocab(
                              *vocab_.tokenizer, static_cast<int32_t>(vocab), text_.stop_ids));
    automata_ = std::make_unique<runtime::AutomatonCache>(std::move(tv));
  }
  return Status::ok();
}

const runtime::DecoderText* Model::decoder_text_or(Status* why) const {
  if (has_chat_) return &text_;
  if (!vocab_status_.is_ok()) {
    *why = vocab_status_;
    return nullptr;
  }
  *why = chat_status_.is_ok() ? Status(StatusCode::kUnsupported, "the model has no chat template")
                              : chat_status_;
  return nullptr;
}

void Model::fill_info(const std::string& path, std::string_view format) {
  ModelInfo& i = info_;
  i.kind = kind_;
  i.architecture = graph_.meta.architecture;
  if (const std::string* arch = property(graph_, "general.architecture");
      arch && kind_ == ModelKind::kDecoder)
    i.architecture = *arch;
  if (vocab_.file && kind_ == ModelKind::kDecoder && i.architecture.empty())
    if (Result<std::string_view> a = vocab_.file->get_string("general.architecture"); a.is_ok())
      i.architecture = std::string(*a);
  if (const std::string* n = property(graph_, "general.name"); n && !n->empty()) i.name = *n;
  if (i.name.empty() && vocab_.file)
    if (Result<std::string_view> n = vocab_.file->get_string("general.name"); n.is_ok())
      i.name = std::string(*n);
  if (i.name.empty() && !graph_.meta.provenance.source.empty())
    i.name = basename_of(graph_.meta.provenance.source);
  if (i.name.empty()) i.name = path.empty() ? "model" : basename_of(path);
  if (format == "gguf")
    i.format = "gguf";
  else
    i.format = "laya " + std::to_string(ir::kModelFormatMajor) + "." +
               std::to_string(ir::kModelFormatMinor);
  i.source = graph_.meta.provenance.source.empty() ? path : graph_.meta.provenance.source;
  i.converter = graph_.meta.provenance.converter_version;
  if (!graph_.meta.provenance.files.empty())
    i.source_sha256 = graph_.meta.provenance.files[0].sha256;
  std::set<std::string> dtypes;
  for (const ir::Value& v : graph_.values) {
    if (v.kind != ir::ValueKind::kWeight) continue;
    i.weight_bytes += v.nbytes;
    int64_t n = 1;
    for (int d = 0; d < v.shape.rank; ++d) n *= v.shape.dims[d].c;
    i.parameters += n;
    dtypes.insert(ir::dtype_name(v.dtype));
  }
  for (const std::string& d : dtypes) i.weight_dtypes += (i.weight_dtypes.empty() ? "" : ",") + d;
  if (kind_ == ModelKind::kEncoder) {
    i.vocab_size = encoder_->tokenizer()->vocab_size();
    const int t = graph_.find_symbol("tokens"), o = graph_.find_symbol("options");
    i.max_tokens = t >= 0 ? graph_.symbols[static_cast<size_t>(t)].max : 0;
    i.max_options = o >= 0 ? graph_.symbols[static_cast<size_t>(o)].max : 0;
    i.max_len = settings_.max_len;
    i.head_max_len = settings_.head_max_len;
  } else {
    const ir::Value& logits = graph_.values[graph_.outputs.at(0)];
    i.vocab_size = static_cast<int32_t>(logits.shape.dims[logits.shape.rank - 1].c);
    const int c = graph_.find_symbol("cells");
    i.max_tokens = c >= 0 ? graph_.symbols[static_cast<size_t>(c)].max : 0;
    i.max_options = runtime::kMaxDecoderOptions;
    i.chat_format = has_chat_ ? chat_format_name(text_.chat.format()) : "";
  }
  for (const char* key : {"encoder.num_hidden_layers", "laya.num_layers", "llama.block_count",
                          "qwen2.block_count", "block_count"})
    if (const std::string* v = property(graph_, key); v && i.layers == 0)
      i.layers = std::atoi(v->c_str());
  for (const char* key : {"encoder.hidden_size", "laya.hidden_size", "llama.embedding_length",
                          "qwen2.embedding_length", "embedding_length"})
    if (const std::string* v = property(graph_, key); v && i.hidden_size == 0)
      i.hidden_size = std::atoi(v->c_str());
  for (int k = 0; k < 3; ++k) i.temperature[k] = temps_.temperature[k];
}

runtime::SessionOptions Model::session_options(int n_threads) const {
  runtime::SessionOptions so;
  so.device = device_;
  so.backends = opts_.backends;
  so.backend.n_threads = n_threads > 0 ? n_threads : opts_.n_threads;
  so.backend_options = opts_.backend_options;
  for (auto& [name, bo] : so.backend_options) bo.n_threads = so.backend.n_threads;
  return so;
}

Result<std::shared_ptr<const grammar::TokenAutomaton>> Model::automaton(
    const json::Value& schema) const {
  if (automata_ == nullptr)
    return Status(StatusCode::kUnsupported, "schema grammars need a decoder model");
  return automata_->get(schema);
}

}  // namespace laya::decision
