// The .laya model file: round trip, malformed files (one specific code each), robustness sweep,
// writer atomicity.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/laya_generated.h"
#include "ir/model_file.h"
#include "tests/test_files.h"

using namespace laya;
using namespace laya::ir;

namespace {

// ---- helpers ---------------------------------------------------------------------------------

using test::TempDir;

// A 64-byte aligned, shared byte buffer (what model_parse wants).
// Overwrites 4 bytes at `p`. Out of line: GCC 12's -Wstringop-overflow (at -O2) misreads a write
// through a pointer derived from a FlatBuffers Table as a write into the 1-byte Table object.
[[gnu::noinline]] void poke_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}

struct Image {
  std::shared_ptr<uint8_t> buf;
  size_t size = 0;
  uint8_t* data() const { return buf.get(); }
};

Image image_alloc(size_t size) {
  Image im;
  const size_t alloc = (size + 63) / 64 * 64 + 64;
  im.buf = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)),
                                    [](uint8_t* p) { std::free(p); });
  std::memset(im.buf.get(), 0, alloc);
  im.size = size;
  return im;
}

Image image_read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                std::istreambuf_iterator<char>());
  Image im = image_alloc(bytes.size());
  std::memcpy(im.data(), bytes.data(), bytes.size());
  return im;
}

Image image_copy(const Image& src) {
  Image im = image_alloc(src.size);
  std::memcpy(im.data(), src.data(), src.size);
  return im;
}

void file_write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  REQUIRE(f.good());
}

Result<Graph> parse(const Image& im, size_t size) {
  return model_parse(im.data(), size, im.buf);
}
Result<Graph> parse(const Image& im) {
  return parse(im, im.size);
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// A weight filled with random bytes (block scales included: the IR does not look at them).
ValueId add_weight(GraphBuilder& b, const std::string& name, DType dtype, const Shape& shape,
                   Quant quant = {}) {
  Result<int64_t> count = shape_max_count(shape, {});
  REQUIRE(count.is_ok());
  Result<uint64_t> bytes = dtype_bytes(dtype, *count);
  REQUIRE(bytes.is_ok());
  const std::vector<uint8_t> data =
      random_bytes(*bytes, static_cast<uint32_t>(std::hash<std::string>()(name)));
  return b.weight(name, dtype, shape, data.data(), *bytes, std::move(quant));
}

Quant block_quant() {
  Quant q;
  q.kind = QuantKind::kBlock;
  return q;
}

Quant per_channel(int64_t channels) {
  Quant q;
  q.kind = QuantKind::kPerChannel;
  q.axis = 0;
  for (int64_t i = 0; i < channels; ++i) q.scales.push_back(0.01f + 0.001f * static_cast<float>(i));
  q.zero_points.assign(static_cast<size_t>(channels), 0);
  return q;
}

Quant per_tensor(float scale) {
  Quant q;
  q.kind = QuantKind::kPerTensor;
  q.scales = {scale};
  return q;
}

// Sets every metadata field; the blob bytes are owned by `g.keepalive`.
void fill_metadata(Graph& g) {
  auto tok = std::make_shared<std::vector<uint8_t>>();
  const std::string json = R"({"version":"1.0","model":{"type":"BPE","vocab":{"a":0,"b":1}}})";
  for (int i = 0; i < 20; ++i) tok->insert(tok->end(), json.begin(), json.end());
  auto exe0 = std::make_shared<std::vector<uint8_t>>(random_bytes(300, 1));
  auto exe1 = std::make_shared<std::vector<uint8_t>>(random_bytes(77, 2));
  Metadata& m = g.meta;
  m.architecture = "test-all-ops";
  m.tokenizer_kind = "hf-tokenizer-json";
  m.tokenizer = Blob{tok->data(), tok->size()};
  m.decision.present = true;
  m.decision.max_len = 512;
  m.decision.head_max_len = 64;
  m.decision.head_layers = 2;
  m.decision.temperature[0] = 1.25f;
  m.decision.temperature[1] = 0.75f;
  m.decision.temperature[2] = 2.0f;
  m.decision.temperature_by_options = {
      {"choice:2", 1.1f}, {"choice:3-5", 1.2f}, {"score:11+", 0.9f}};
  m.decision.act_costs = {0.0f, 0.5f, 1.5f};
  m.chat_template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}";
  m.provenance.source = "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1)";
  m.provenance.converter_version = "laya-convert 0.1.0";
  m.provenance.files = {
      {"model.gguf", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
      {"tokenizer.json", "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"}};
  m.properties = {{"n_layer", "1"}, {"rope_theta", "500000"}, {"vocab_size", "64"}};
  m.executables = {{"ax8850", "layers.0-3", Blob{exe0->data(), exe0->size()}},
                   {"ax8850", "head", Blob{exe1->data(), exe1->size()}}};
  g.keepalive.push_back(tok);
  g.keepalive.push_back(exe0);
  g.keepalive.push_back(exe1);
}

// Every op, weights in f32 / f16 / bf16 / i8 per-channel / i8 per-tensor / q8_0 / q4_0 / q4_1,
// symbolic dims batch, seq and past + seq, every attribute away from its default somewhere.
Graph make_full_graph() {
  GraphBuilder b;
  const int batch = b.symbol("batch", 1, 4);
  const int seq = b.symbol("seq", 1, 128);
  const int past = b.symbol("past", 0, 1024);
  const Dim B = Dim::sym(batch), S = Dim::sym(seq), T = *dim_add(Dim::sym(past), Dim::sym(seq));
  const int64_t d = 64, hd = 16, n_kv = 2, vocab = 64;
  const ValueId ids = b.input("ids", DType::kI32, Shape::of({B, S}), InputRole::kTokenIds);
  const ValueId pos = b.input("pos", DType::kI32, Shape::of({B, S}), InputRole::kPositions);
  const ValueId kmask = b.input("key_mask", DType::kI32, Shape::of({B, T}), InputRole::kKeyMask);
  const ValueId kc = b.input("k_cache", DType::kF32, Shape::of({B, T, Dim::fixed(n_kv * hd)}));
  const ValueId vc = b.input("v_cache", DType::kF32, Shape::of({B, T, Dim::fixed(n_kv * hd)}));

  const ValueId emb =
      add_weight(b, "tok_emb", DType::kQ8_0, Shape::fixed({vocab, d}), block_quant());
  const ValueId x = b.embedding(emb, ids, "embed");
  const ValueId h = b.layernorm(x, add_weight(b, "ln.g", DType::kF32, Shape::fixed({d})),
                                add_weight(b, "ln.b", DType::kF32, Shape::fixed({d})), 1e-6f, "ln");
  const ValueId h2 =
      b.rmsnorm(h, add_weight(b, "rms.g", DType::kF32, Shape::fixed({d})), 2e-6f, "rms");
  const ValueId q = b.matmul(h2, add_weight(b, "wq", DType::kF16, Shape::fixed({d, d})),
                             add_weight(b, "bq", DType::kF32, Shape::fixed({d})), "q_proj");
  const ValueId qr =
      b.rope(q, pos, static_cast<int32_t>(hd), 500000.0f, RopeMode::kGptj, 8, "rope");
  Attrs a;
  a.n_heads = 4;
  a.n_kv_heads = 2;
  a.head_dim = static_cast<int32_t>(hd);
  a.scale = 0.25f;
  a.mask = MaskKind::kCausal;
  a.window = 8;
  const ValueId att = b.attention(qr, kc, vc, kmask, a, "attn");
  // Positions and sequence ids without a key mask (a hole in input slot 3).
  const ValueId kpos = b.input("k_pos", DType::kI32, Shape::of({B, T}));
  const ValueId qseq = b.input("q_seq", DType::kI32, Shape::of({B, S}));
  const ValueId kseq = b.input("k_seq", DType::kI32, Shape::of({B, T}));
  const ValueId att_ids = b.attention(qr, kc, vc, kNoValue, {pos, kpos, qseq, kseq}, a, "attn_ids");
  // A KV cache: k / v rows written into the states' cells, attention over the cells.
  const int cells = b.symbol("cells", 1, 256);
  const Shape cache = Shape::of({Dim::fixed(1), Dim::sym(cells), Dim::fixed(n_kv * hd)});
  const Shape per_cell = Shape::of({Dim::fixed(1), Dim::sym(cells)});
  const ValueId tok_cells =
      b.input("cells", DType::kI32, Shape::of({B, S}), InputRole::kCacheCells);
  const ValueId seq_ids = b.input("seq_ids", DType::kI32, Shape::of({B, S}), InputRole::kSeqIds);
  const ValueId cell_pos = b.input("cell_pos", DType::kI32, per_cell, InputRole::kCellPositions);
  const ValueId cell_seq = b.input("cell_seq", DType::kI32, per_cell, InputRole::kCellSeqIds);
  const ValueId k_state = b.state("k_state", DType::kF32, cache);
  const ValueId v_state = b.state("v_state", DType::kF32, cache);
  const ValueId k_new = b.matmul(h2, add_weight(b, "wk", DType::kF32, Shape::fixed({n_kv * hd, d})),
                                 kNoValue, "k_proj");
  const ValueId k_cells = b.kv_write(k_state, k_new, tok_cells, "k_write");
  const ValueId v_cells = b.kv_write(v_state, k_new, tok_cells, "v_write");
  const ValueId att_cells = b.attention(qr, k_cells, v_cells, kNoValue,
                                        {pos, cell_pos, seq_ids, cell_seq}, a, "attn_cells");
  const ValueId att_sum = b.add(b.add(att, att_ids, "attn_sum0"), att_cells, "attn_sum");
  const ValueId o = b.matmul(att_sum, add_weight(b, "wo", DType::kBF16, Shape::fixed({d, d})),
                             kNoValue, "o_proj");
  const ValueId r1 = b.add(o, x, "resid");
  const ValueId up =
      b.matmul(r1, add_weight(b, "w_up", DType::kI8, Shape::fixed({2 * d, d}), per_channel(2 * d)),
               kNoValue, "up");
  const ValueId g1 = b.glu(up, ActKind::kSilu, "glu");
  const ValueId ge = b.gelu(g1, ActKind::kGeluTanh, "gelu");
  const ValueId si = b.silu(ge, "silu");
  const ValueId re = b.relu(si, "relu");
  const ValueId mu = b.mul(re, add_weight(b, "scale", DType::kF32, Shape::fixed({d})), "mul");
  const ValueId d1 =
      b.matmul(mu, add_weight(b, "w_q4_0", DType::kQ4_0, Shape::fixed({d, d}), block_quant()),
               kNoValue, "down");
  const ValueId d2 =
      b.matmul(d1, add_weight(b, "w_q4_1", DType::kQ4_1, Shape::fixed({96, d}), block_quant()),
               kNoValue, "head");
  const std::vector<ValueId> parts = b.split(d2, {32, 64}, "split");
  REQUIRE(parts.size() == 2);
  const ValueId sm = b.softmax(parts[0], "softmax");
  const ValueId lg = b.matmul(
      parts[1], add_weight(b, "w_i8t", DType::kI8, Shape::fixed({8, d}), per_tensor(0.02f)),
      kNoValue, "cls");
  const ValueId side = b.relu(vc, "side");  // independent of the main chain
  // The data-movement and decision-head ops.
  const ValueId rows = b.input("rows", DType::kI32, Shape::of({B}));
  const ValueId valid = b.input("valid", DType::kI32, Shape::of({B, S, Dim::fixed(1)}));
  const ValueId cat =
      b.concat({b.gather(h, rows, "gather"), b.segment_mean(h, rows, "segmean")}, "concat");
  const ValueId score =
      b.matmul(h, add_weight(b, "w_score", DType::kF32, Shape::fixed({1, d})), kNoValue, "score");
  const ValueId masked = b.masked_fill(score, valid, -1e4f, "masked_fill");
  const ValueId feats = b.act_features(b.reshape(masked, {-1, -2}, "squeeze"), pos, "features");
  b.output(sm, "probs");
  b.output(lg, "logits");
  b.output(side, "side_out");
  b.output(cat, "cat_out");
  b.output(feats, "features_out");
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  fill_metadata(*g);
  return std::move(g).value();
}

// A small graph for the sweeps: embedding (q4_0) -> layernorm -> matmul (i8) -> split.
Graph make_small_graph() {
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 16);
  const ValueId ids =
      b.input("ids", DType::kI32, Shape::of({Dim::fixed(1), Dim::sym(seq)}), InputRole::kTokenIds);
  const ValueId x = b.embedding(
      add_weight(b, "emb", DType::kQ4_0, Shape::fixed({8, 32}), block_quant()), ids, "embed");
  const ValueId h =
      b.layernorm(x, add_weight(b, "g", DType::kF32, Shape::fixed({32})), kNoValue, 1e-5f, "ln");
  const ValueId y = b.matmul(
      h, add_weight(b, "w", DType::kI8, Shape::fixed({16, 32}), per_channel(16)), kNoValue, "mm");
  const std::vector<ValueId> parts = b.split(y, {4, 12}, "split");
  REQUIRE(parts.size() == 2);
  b.output(parts[0], "a");
  b.output(parts[1], "b");
  b.meta().architecture = "small";
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  auto exe = std::make_shared<std::vector<uint8_t>>(random_bytes(40, 3));
  g->meta.executables = {{"ax8850", "all", Blob{exe->data(), exe->size()}}};
  g->keepalive.push_back(exe);
  return std::move(g).value();
}

// Writes `g` and returns the file's bytes.
Image written_image(const Graph& g, const TempDir& dir, const std::string& name = "m.laya") {
  const std::string path = dir.file(name);
  const Status s = model_write(g, path);
  REQUIRE_MESSAGE(s.is_ok(), s.to_string());
  return image_read(path);
}

fb::Model* mutable_model(const Image& im) {
  return fb::GetMutableSizePrefixedModel(im.data());
}

fb::Value* fb_value(const Image& im, const std::string& name) {
  auto* values = mutable_model(im)->mutable_values();
  for (uint32_t i = 0; i < values->size(); ++i)
    if (values->Get(i)->name()->str() == name) return values->GetMutableObject(i);
  FAIL("no value named " << name);
  return nullptr;
}

fb::Node* fb_node(const Image& im, const std::string& name) {
  auto* nodes = mutable_model(im)->mutable_nodes();
  for (uint32_t i = 0; i < nodes->size(); ++i)
    if (nodes->Get(i)->name()->str() == name) return nodes->GetMutableObject(i);
  FAIL("no node named " << name);
  return nullptr;
}

uint32_t value_id(const Graph& g, const std::string& name) {
  const ValueId id = g.find_value(name);
  REQUIRE(id != kNoValue);
  return id;
}

// Whether a Status message mentions `needle` (always true when messages are stripped).
bool mentions(const Status& s, const std::string& needle) {
#if LAYA_STRIP_MESSAGES
  (void)s;
  (void)needle;
  return true;
#else
  return std::string(s.message()).find(needle) != std::string::npos;
#endif
}

void check_error(const Result<Graph>& r, StatusCode code, const std::string& needle) {
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().to_string());
  CHECK(status_code_name(r.status().code()) == std::string(status_code_name(code)));
  CHECK(mentions(r.status(), needle));
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Whether [p, p + n) lies in a mapping of `path` (per /proc/self/maps).
bool in_file_mapping(const void* p, uint64_t n, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + n;
  while (std::getline(maps, line)) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path))
      continue;
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    if (lo >= start && hi <= end) return true;
  }
  return false;
}

}  // namespace

// ---- round trip ------------------------------------------------------------------------------

TEST_CASE("model file: a graph with every op, dtype and metadata field round-trips") {
  TempDir dir;
  const Graph g = make_full_graph();
  {
    bool all_ops[static_cast<size_t>(Op::kCount)] = {};
    for (const Node& n : g.nodes) all_ops[static_cast<size_t>(n.op)] = true;
    for (size_t i = 0; i < static_cast<size_t>(Op::kCount); ++i)
      CHECK_MESSAGE(all_ops[i], "op not covered: " << op_name(static_cast<Op>(i)));
  }
  const std::string path = dir.file("full.laya");
  const Status s = model_write(g, path);
  REQUIRE_MESSAGE(s.is_ok(), s.to_string());
  CHECK_FALSE(exists(path + ".tmp"));

  Result<Graph> loaded = model_load(path);
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().to_string());
  std::string why;
  CHECK_MESSAGE(graph_equal(g, *loaded, &why), why);
  CHECK(graph_print(g) == graph_print(*loaded));

  // Weights and blobs point into the file mapping (not copied), 64-byte aligned.
  int weights = 0;
  for (const Value& v : loaded->values) {
    if (v.kind != ValueKind::kWeight) continue;
    ++weights;
    REQUIRE(v.data != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(v.data) % 64 == 0);
    CHECK_MESSAGE(in_file_mapping(v.data, v.nbytes, path), v.name);
  }
  CHECK(weights == 14);
  CHECK(in_file_mapping(loaded->meta.tokenizer.data, loaded->meta.tokenizer.size, path));
  for (const PrecompiledExecutable& e : loaded->meta.executables) {
    CHECK(reinterpret_cast<uintptr_t>(e.bytes.data) % 64 == 0);
    CHECK(in_file_mapping(e.bytes.data, e.bytes.size, path));
  }

  // The mapping outlives the file name and the first graph (copies share it).
  Graph copy = *loaded;
  loaded = Result<Graph>(Status(StatusCode::kInternal, "dropped"));
  REQUIRE(::unlink(path.c_str()) == 0);
  CHECK_MESSAGE(graph_equal(g, copy, &why), why);
}

TEST_CASE("model file: model_parse points into the caller's buffer") {
  TempDir dir;
  const Graph g = make_full_graph();
  const Image im = written_image(g, dir);
  Result<Graph> r = parse(im);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  std::string why;
  CHECK_MESSAGE(graph_equal(g, *r, &why), why);
  for (const Value& v : r->values)
    if (v.kind == ValueKind::kWeight) {
      CHECK(v.data >= im.data());
      CHECK(v.data + v.nbytes <= im.data() + im.size);
    }
  // The graph keeps the buffer alive.
  CHECK(im.buf.use_count() >= 2);

  // Layout: identifier at bytes 8..11, weight section 64-aligned right after the FlatBuffer,
  // and the file ends with the section.
  CHECK(std::memcmp(im.data() + 8, "LAYA", 4) == 0);
  const fb::Model* m = fb::GetSizePrefixedModel(im.data());
  uint32_t fb_size = 0;
  std::memcpy(&fb_size, im.data(), 4);
  CHECK(m->format_major() == 1);
  CHECK(m->format_minor() == kModelFormatMinor);
  CHECK(m->weights_offset() % 64 == 0);
  CHECK(m->weights_offset() >= 4 + fb_size);
  CHECK(m->weights_offset() < 4 + fb_size + 64);
  CHECK(m->weights_offset() + m->weights_size() == im.size);

  // An unaligned buffer is refused rather than producing unaligned weights.
  Image shifted = image_alloc(im.size + 8);
  std::memcpy(shifted.data() + 8, im.data(), im.size);
  Result<Graph> r2 = model_parse(shifted.data() + 8, im.size, shifted.buf);
  check_error(r2, StatusCode::kInvalidArgument, "aligned");
}

TEST_CASE("model file: an empty graph and a graph without metadata round-trip") {
  TempDir dir;
  Graph empty;
  const Image im = written_image(empty, dir);
  Result<Graph> r = parse(im);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  std::string why;
  CHECK_MESSAGE(graph_equal(empty, *r, &why), why);
  CHECK(fb::GetSizePrefixedModel(im.data())->weights_size() == 0);

  const Graph small = make_small_graph();
  Result<Graph> r2 = parse(written_image(small, dir, "small.laya"));
  REQUIRE_MESSAGE(r2.is_ok(), r2.status().to_string());
  CHECK_MESSAGE(graph_equal(small, *r2, &why), why);
}

TEST_CASE("model file: schema attribute defaults equal ir/attrs.inc defaults") {
  flatbuffers::FlatBufferBuilder b;
  fb::AttrsBuilder ab(b);
  b.Finish(ab.Finish());
  const fb::Attrs* a = flatbuffers::GetRoot<fb::Attrs>(b.GetBufferPointer());
  const Attrs defaults;
#define ATTR(type, name, def, lo, hi) \
  CHECK_MESSAGE(static_cast<type>(a->name()) == defaults.name, #name);
#include "ir/attrs.inc"
#undef ATTR
}

TEST_CASE("model file: damaged state lists are graph errors") {
  TempDir dir;
  const Graph g = make_full_graph();
  const Image im = written_image(g, dir);
  auto* states = mutable_model(im)->mutable_states();
  REQUIRE(states != nullptr);
  REQUIRE(states->size() == 2);
  const uint32_t k_state = states->Get(0), v_state = states->Get(1);
  states->Mutate(1, k_state);  // listed twice, v_state missing
  check_error(parse(im), StatusCode::kGraphInvalid, "graph state");
  states->Mutate(1, value_id(g, "ids"));  // not a state
  check_error(parse(im), StatusCode::kGraphInvalid, "'ids'");
  states->Mutate(1, 1u << 30);
  check_error(parse(im), StatusCode::kGraphInvalid, "out of range");
  states->Mutate(1, v_state);
  REQUIRE_MESSAGE(parse(im).is_ok(), parse(im).status().to_string());
}

TEST_CASE("model file: an f16 KV cache (f16 states) round-trips") {
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 16);
  const int cells = b.symbol("cells", 1, 64);
  const Shape tok = Shape::of({Dim::fixed(1), Dim::sym(seq)});
  const Shape per_cell = Shape::of({Dim::fixed(1), Dim::sym(cells)});
  const ValueId x =
      b.input("x", DType::kF32, Shape::of({Dim::fixed(1), Dim::sym(seq), Dim::fixed(32)}));
  const ValueId pos = b.input("pos", DType::kI32, tok, InputRole::kPositions);
  const ValueId tcells = b.input("cells", DType::kI32, tok, InputRole::kCacheCells);
  const ValueId sids = b.input("seq_ids", DType::kI32, tok, InputRole::kSeqIds);
  const ValueId cpos = b.input("cell_pos", DType::kI32, per_cell, InputRole::kCellPositions);
  const ValueId cseq = b.input("cell_seq", DType::kI32, per_cell, InputRole::kCellSeqIds);
  const Shape cache = Shape::of({Dim::fixed(1), Dim::sym(cells), Dim::fixed(16)});
  const ValueId ks = b.state("k_cache", DType::kF16, cache);
  const ValueId vs = b.state("v_cache", DType::kF16, cache);
  const ValueId kc = b.kv_write(ks, b.split(x, {16, 16}, "kv")[0], tcells, "kw");
  const ValueId vc = b.kv_write(vs, b.split(x, {16, 16}, "kv2")[1], tcells, "vw");
  Attrs a;
  a.n_heads = 2;
  a.n_kv_heads = 1;
  a.head_dim = 16;
  a.mask = MaskKind::kCausal;
  b.output(b.attention(x, kc, vc, kNoValue, {pos, cpos, sids, cseq}, a, "attn"), "y");
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  TempDir dir;
  Result<Graph> r = parse(written_image(*g, dir));
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  std::string why;
  CHECK_MESSAGE(graph_equal(*g, *r, &why), why);
  REQUIRE(r->states.size() == 2);
  for (ValueId st : r->states) CHECK(r->values[st].dtype == DType::kF16);
  CHECK(r->values[value_id(*r, "kw")].dtype == DType::kF16);
}

TEST_CASE("model file: a newer minor version loads") {
  TempDir dir;
  const Graph g = make_small_graph();
  const Image im = written_image(g, dir);
  REQUIRE(mutable_model(im)->mutate_format_minor(7));
  Result<Graph> r = parse(im);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  std::string why;
  CHECK_MESSAGE(graph_equal(g, *r, &why), why);
}

// ---- malformed files -------------------------------------------------------------------------

TEST_CASE("model file: malformed files are rejected with a specific code") {
  TempDir dir;
  const Graph g = make_full_graph();
  const Image valid = written_image(g, dir);
  uint32_t fb_size = 0;
  std::memcpy(&fb_size, valid.data(), 4);
  const fb::Model* vm = fb::GetSizePrefixedModel(valid.data());
  const uint64_t weights_offset = vm->weights_offset();
  const uint64_t weights_size = vm->weights_size();
  REQUIRE(parse(valid).is_ok());
  Image im = image_copy(valid);

  SUBCASE("empty file") {
    const std::string path = dir.file("empty.laya");
    file_write(path, nullptr, 0);
    check_error(model_load(path), StatusCode::kFileEmpty, "empty");
    check_error(parse(im, 0), StatusCode::kFileEmpty, "empty");
  }
  SUBCASE("a directory") {
    check_error(model_load(dir.path), StatusCode::kIoError, dir.path);
    check_error(model_load(dir.path), StatusCode::kIoError, "directory");
  }
  SUBCASE("a nonexistent path") {
    const std::string path = dir.file("missing.laya");
    check_error(model_load(path), StatusCode::kIoError, path);
  }
  SUBCASE("truncated inside the size prefix") {
    const std::string path = dir.file("t2.laya");
    file_write(path, valid.data(), 2);
    check_error(model_load(path), StatusCode::kFileTruncated, "header");
    check_error(model_load(path), StatusCode::kFileTruncated, path);
  }
  SUBCASE("truncated inside the FlatBuffer") {
    check_error(parse(im, fb_size / 2), StatusCode::kFileTruncated, "size prefix");
    check_error(parse(im, fb_size + 3), StatusCode::kFileTruncated, "size prefix");
  }
  SUBCASE("truncated inside the weight section") {
    check_error(parse(im, im.size - 10), StatusCode::kFileTruncated, "weight section");
    check_error(parse(im, weights_offset + 1), StatusCode::kFileTruncated, "weight section");
    // in the padding between the FlatBuffer and the section
    if (weights_offset > 4 + fb_size)
      check_error(parse(im, weights_offset - 1), StatusCode::kFileTruncated, "weight section");
  }
  SUBCASE("bad identifier") {
    std::memcpy(im.data() + 8, "GGUF", 4);
    check_error(parse(im), StatusCode::kFileBadIdentifier, "LAYA");
  }
  SUBCASE("newer major version") {
    REQUIRE(mutable_model(im)->mutate_format_major(2));
    check_error(parse(im), StatusCode::kFileUnsupportedVersion,
                "2." + std::to_string(kModelFormatMinor));
  }
  SUBCASE("newer major whose tables do not verify is still a version error") {
    REQUIRE(mutable_model(im)->mutate_format_major(3));
    // Break the values vector: its length now runs far past the buffer.
    auto* values = mutable_model(im)->mutable_values();
    const uint32_t huge = 0x3fffffff;
    poke_u32(reinterpret_cast<uint8_t*>(values), huge);
    check_error(parse(im), StatusCode::kFileUnsupportedVersion,
                "3." + std::to_string(kModelFormatMinor));
  }
  SUBCASE("major version 0") {
    REQUIRE(mutable_model(im)->mutate_format_major(0));
    check_error(parse(im), StatusCode::kFileUnsupportedVersion,
                "0." + std::to_string(kModelFormatMinor));
  }
  SUBCASE("FlatBuffers verifier failure") {
    auto* values = mutable_model(im)->mutable_values();
    const uint32_t huge = 0x3fffffff;
    poke_u32(reinterpret_cast<uint8_t*>(values), huge);
    check_error(parse(im), StatusCode::kFileCorrupt, "verifier");
  }
  SUBCASE("root offset outside the buffer") {
    const uint32_t huge = 0x7ffffff0;
    std::memcpy(im.data() + 4, &huge, 4);
    check_error(parse(im), StatusCode::kFileCorrupt, "root table");
  }
  SUBCASE("weight section past the end of the file") {
    REQUIRE(mutable_model(im)->mutate_weights_size(weights_size + 4096));
    check_error(parse(im), StatusCode::kFileTruncated, "weight section");
  }
  SUBCASE("weight section overlapping the FlatBuffer") {
    REQUIRE(mutable_model(im)->mutate_weights_offset(0));
    check_error(parse(im), StatusCode::kFileOffsetOutOfBounds, "overlaps");
  }
  SUBCASE("misaligned weight section") {
    REQUIRE(mutable_model(im)->mutate_weights_offset(weights_offset + 8));
    check_error(parse(im), StatusCode::kFileMisaligned, "weight section");
  }
  SUBCASE("weight offset out of bounds") {
    fb_value(im, "wq")->mutable_data()->mutate_offset(weights_size + 64);
    check_error(parse(im), StatusCode::kFileOffsetOutOfBounds, "'wq'");
  }
  SUBCASE("weight offset + size wraps around") {
    fb_value(im, "wq")->mutable_data()->mutate_offset(UINT64_MAX - 63);
    check_error(parse(im), StatusCode::kFileOffsetOutOfBounds, "'wq'");
  }
  SUBCASE("misaligned weight offset") {
    fb::Extent* e = fb_value(im, "wq")->mutable_data();
    e->mutate_offset(e->offset() + 8);
    check_error(parse(im), StatusCode::kFileMisaligned, "'wq'");
  }
  SUBCASE("tokenizer out of bounds") {
    auto* t = const_cast<fb::Extent*>(mutable_model(im)->mutable_metadata()->tokenizer());
    t->mutate_size(weights_size);
    check_error(parse(im), StatusCode::kFileOffsetOutOfBounds, "tokenizer");
  }
  SUBCASE("misaligned executable") {
    auto* exes = mutable_model(im)->mutable_metadata()->mutable_executables();
    fb::Extent* e = exes->GetMutableObject(1)->mutable_data();
    e->mutate_offset(e->offset() + 4);
    check_error(parse(im), StatusCode::kFileMisaligned, "'head'");
  }
  SUBCASE("element count overflows") {
    fb_value(im, "wq")->mutable_shape()->Mutate(0, int64_t{1} << 62);
    check_error(parse(im), StatusCode::kFileSizeOverflow, "'wq'");
  }
  SUBCASE("dims x dtype overflows") {
    // 2^61 * 2 elements fit in int64; as f16 they need 2^63 bytes, which does not.
    fb::Value* v = fb_value(im, "wq");
    v->mutable_shape()->Mutate(0, int64_t{1} << 61);
    v->mutable_shape()->Mutate(1, 2);
    check_error(parse(im), StatusCode::kFileSizeOverflow, "'wq'");
  }
  SUBCASE("symbolic bound overflows") {
    auto* sym = mutable_model(im)->mutable_symbols()->GetMutableObject(2);  // past
    REQUIRE(sym->mutate_max(INT64_MAX));
    check_error(parse(im), StatusCode::kFileSizeOverflow, "overflow");
  }
  SUBCASE("stored size differs from shape x dtype") {
    fb::Extent* e = fb_value(im, "wo")->mutable_data();
    e->mutate_size(e->size() - 2);
    check_error(parse(im), StatusCode::kFileSizeMismatch, "'wo'");
  }
  SUBCASE("block weight that is not whole blocks") {
    fb_value(im, "w_q4_0")->mutable_shape()->Mutate(0, 1);  // [1, 16]: half a block
    fb_value(im, "w_q4_0")->mutable_shape()->Mutate(1, 16);
    check_error(parse(im), StatusCode::kGraphShapeMismatch, "'w_q4_0'");
  }
  SUBCASE("unknown dtype") {
    REQUIRE(fb_value(im, "ln.g")->mutate_dtype(static_cast<fb::DType>(77)));
    check_error(parse(im), StatusCode::kFileCorrupt, "dtype 77");
  }
  SUBCASE("unknown op") {
    REQUIRE(fb_node(im, "gelu")->mutate_op(static_cast<fb::Op>(200)));
    check_error(parse(im), StatusCode::kGraphUnknownOp, "'gelu'");
  }
  SUBCASE("node reads a value id that does not exist") {
    fb_node(im, "ln")->mutable_inputs()->Mutate(0, 100000);
    check_error(parse(im), StatusCode::kGraphUndefinedValue, "100000");
  }
  SUBCASE("absent inputs (0xffffffff) in a required slot or at the end") {
    fb_node(im, "ln")->mutable_inputs()->Mutate(0, kNoValue);
    check_error(parse(im), StatusCode::kGraphUndefinedValue,
                "'ln' (layernorm): input 0 is required");
    Image im2 = valid;
    fb_node(im2, "ln")->mutable_inputs()->Mutate(2, kNoValue);  // beta, the last input
    check_error(parse(im2), StatusCode::kGraphInvalid,
                "'ln' (layernorm): the last input is absent");
  }
  SUBCASE("node reads a value before it is defined") {
    fb_node(im, "ln")->mutable_inputs()->Mutate(0, value_id(g, "side_out"));
    check_error(parse(im), StatusCode::kGraphUndefinedValue, "'ln' reads 'side_out' before");
  }
  SUBCASE("cycle") {
    fb_node(im, "ln")->mutable_inputs()->Mutate(0, value_id(g, "rms"));
    check_error(parse(im), StatusCode::kGraphCycle, "cycle");
  }
  SUBCASE("value written by two nodes") {
    fb_node(im, "silu")->mutable_outputs()->Mutate(0, value_id(g, "gelu"));
    check_error(parse(im), StatusCode::kGraphInvalid, "'gelu' is written by nodes");
  }
  SUBCASE("node writes a weight") {
    fb_node(im, "silu")->mutable_outputs()->Mutate(0, value_id(g, "wq"));
    check_error(parse(im), StatusCode::kGraphInvalid, "weight value");
  }
  SUBCASE("dtype mismatch") {
    REQUIRE(fb_value(im, "ln")->mutate_dtype(fb::DType::i32));
    check_error(parse(im), StatusCode::kGraphDtypeMismatch, "'ln'");
  }
  SUBCASE("quantization does not fit the dtype") {
    REQUIRE(fb_value(im, "w_up")->mutable_quant()->mutate_kind(fb::QuantKind::none));
    check_error(parse(im), StatusCode::kGraphQuantMismatch, "'w_up'");
  }
  SUBCASE("per-channel scale count differs from the channel count") {
    fb_value(im, "w_up")->mutable_shape()->Mutate(0, 64);
    fb_value(im, "w_up")->mutable_data()->mutate_size(64 * 64);
    check_error(parse(im), StatusCode::kGraphQuantMismatch, "128 scales for 64 channels");
  }
  SUBCASE("shape term names a missing symbol") {
    auto* terms = fb_value(im, "ids")->mutable_shape_terms();
    REQUIRE(terms->size() == 2);
    const_cast<fb::DimTerm*>(terms->Get(1))->mutate_symbol(7);
    check_error(parse(im), StatusCode::kGraphShapeMismatch, "undefined symbol 7");
  }
  SUBCASE("stored shape differs from what the node computes") {
    fb_value(im, "ln")->mutable_shape()->Mutate(2, 65);
    check_error(parse(im), StatusCode::kGraphShapeMismatch, "'ln'");
  }
  SUBCASE("split sizes that overflow when summed") {
    auto* sizes = fb_node(im, "split")->mutable_attrs()->mutable_sizes();
    sizes->Mutate(0, INT64_MAX);
    sizes->Mutate(1, INT64_MAX);
    check_error(parse(im), StatusCode::kGraphBadAttribute, "split");
  }
  SUBCASE("graph output id out of range") {
    mutable_model(im)->mutable_outputs()->Mutate(0, 4000000000u);
    check_error(parse(im), StatusCode::kGraphInvalid, "4000000000");
  }
}

// ---- robustness ------------------------------------------------------------------------------

TEST_CASE("model file: every truncation of a valid file is an error") {
  TempDir dir;
  const Image valid = written_image(make_small_graph(), dir);
  REQUIRE(parse(valid).is_ok());
  for (size_t len = 0; len < valid.size; ++len) {
    // A fresh buffer of exactly `len` bytes, so reading past it is caught by ASan.
    Image cut = image_alloc(len);
    std::memcpy(cut.data(), valid.data(), len);
    Result<Graph> r = parse(cut, len);
    REQUIRE_MESSAGE(!r.is_ok(), "truncation to " << len << " bytes parsed");
    const StatusCode c = r.status().code();
    CHECK_MESSAGE((c == StatusCode::kFileTruncated || c == StatusCode::kFileEmpty),
                  len << ": " << r.status().to_string());
  }
}

// Mutates 1-4 places of a copy of `valid` (mostly inside the FlatBuffer: changes to weight bytes
// give valid files) and parses it: ok or an error with a message, never a crash (run under
// ASan/UBSan). Returns the number of files that still parsed.
int flip_sweep(const Image& valid, int trials, uint32_t seed, std::string* codes) {
  const uint64_t fb_end = fb::GetSizePrefixedModel(valid.data())->weights_offset();
  static const uint32_t kInteresting[] = {0,      1,          2,          7,          8,
                                          63,     64,         0x7f,       0xff,       0x7fff,
                                          0xffff, 0x7fffffff, 0x80000000, 0xfffffff0, 0xffffffff};
  std::mt19937 rng(seed);
  int ok = 0;
  std::vector<int> by_code(600, 0);
  Image im = image_alloc(valid.size);
  for (int trial = 0; trial < trials; ++trial) {
    std::memcpy(im.data(), valid.data(), valid.size);
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const uint64_t pos = (rng() % 8 != 0) ? rng() % fb_end : rng() % valid.size;
      switch (rng() % 3) {
        case 0:  // one bit
          im.data()[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:  // one random byte
          im.data()[pos] = static_cast<uint8_t>(rng());
          break;
        default: {  // an "interesting" 32-bit value at an aligned place (offsets, lengths, ids)
          const uint64_t at = pos / 4 * 4;
          if (at + 4 > valid.size) break;
          const uint32_t v = kInteresting[rng() % (sizeof kInteresting / sizeof kInteresting[0])];
          std::memcpy(im.data() + at, &v, 4);
          break;
        }
      }
    }
    Result<Graph> r = parse(im);
    if (r.is_ok()) {
      ++ok;
      CHECK(graph_verify(*r).is_ok());
      CHECK(!graph_print(*r).empty());
    } else {
      ++by_code[static_cast<size_t>(r.status().code()) % by_code.size()];
      CHECK(mentions(r.status(), " "));  // some words
    }
  }
  for (size_t c = 0; c < by_code.size(); ++c)
    if (by_code[c])
      *codes += std::string(" ") + status_code_name(static_cast<StatusCode>(c)) + "=" +
                std::to_string(by_code[c]);
  return ok;
}

TEST_CASE("model file: random byte flips never crash the loader") {
  TempDir dir;
  std::string codes;
  const Image small = written_image(make_small_graph(), dir, "small.laya");
  const int ok_small = flip_sweep(small, 4000, 12345, &codes);
  MESSAGE("small graph, 4000 mutated files: " << ok_small << " parsed; rejected:" << codes);
  CHECK(ok_small < 4000);
  codes.clear();
  const Image full = written_image(make_full_graph(), dir, "full.laya");
  const int ok_full = flip_sweep(full, 2000, 777, &codes);
  MESSAGE("full graph, 2000 mutated files: " << ok_full << " parsed; rejected:" << codes);
  CHECK(ok_full < 2000);
}

// ---- writer atomicity ------------------------------------------------------------------------

TEST_CASE("model file: the writer leaves nothing behind on failure") {
  TempDir dir;
  const Graph g = make_full_graph();

  SUBCASE("parent is a regular file") {
    const std::string blocker = dir.file("blocker");
    file_write(blocker, reinterpret_cast<const uint8_t*>("x"), 1);
    const std::string path = blocker + "/m.laya";
    const Status s = model_write(g, path);
    CHECK(s.code() == StatusCode::kIoError);
    CHECK(mentions(s, path + ".tmp"));
    CHECK_FALSE(exists(path));
  }
  SUBCASE("directory does not exist") {
    const std::string path = dir.file("no/such/dir/m.laya");
    const Status s = model_write(g, path);
    CHECK(s.code() == StatusCode::kIoError);
    CHECK_FALSE(exists(dir.file("no")));
  }
  SUBCASE("unwritable directory") {
    const std::string ro = dir.file("ro");
    REQUIRE(::mkdir(ro.c_str(), 0555) == 0);
    if (::geteuid() == 0) {
      MESSAGE("running as root: permission bits do not stop writes, case skipped");
    } else {
      const Status s = model_write(g, ro + "/m.laya");
      CHECK(s.code() == StatusCode::kIoError);
      CHECK(std::filesystem::is_empty(ro));
    }
  }
  SUBCASE("rename fails: the target is a non-empty directory") {
    const std::string path = dir.file("target");
    REQUIRE(::mkdir(path.c_str(), 0755) == 0);
    file_write(path + "/keep", reinterpret_cast<const uint8_t*>("k"), 1);
    const Status s = model_write(g, path);
    CHECK(s.code() == StatusCode::kIoError);
    CHECK(mentions(s, "rename"));
    CHECK_FALSE(exists(path + ".tmp"));
    CHECK(exists(path + "/keep"));
  }
  SUBCASE("a write fails half way: the old file survives, the tmp is removed") {
    const std::string path = dir.file("m.laya");
    const Graph small = make_small_graph();
    REQUIRE(model_write(small, path).is_ok());
    const Image before = image_read(path);

    struct rlimit old_limit;
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    void (*old_handler)(int) = ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small_limit = old_limit;
    small_limit.rlim_cur = 4096;  // the full graph's file is far larger
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small_limit) == 0);
    const Status s = model_write(g, path);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    ::signal(SIGXFSZ, old_handler);

    CHECK(s.code() == StatusCode::kIoError);
    CHECK(mentions(s, "cannot write"));
    CHECK_FALSE(exists(path + ".tmp"));
    const Image after = image_read(path);
    REQUIRE(after.size == before.size);
    CHECK(std::memcmp(after.data(), before.data(), before.size) == 0);
  }
  SUBCASE("an invalid graph is not written") {
    Graph bad = g;
    for (Value& v : bad.values)
      if (v.kind == ValueKind::kWeight) {
        v.nbytes -= 1;
        break;
      }
    const std::string path = dir.file("bad.laya");
    const Status s = model_write(bad, path);
    CHECK(s.code() == StatusCode::kFileSizeMismatch);
    CHECK_FALSE(exists(path));
    CHECK_FALSE(exists(path + ".tmp"));
  }
  SUBCASE("overwriting an existing file replaces it") {
    const std::string path = dir.file("m.laya");
    REQUIRE(model_write(make_small_graph(), path).is_ok());
    REQUIRE(model_write(g, path).is_ok());
    Result<Graph> r = model_load(path);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    std::string why;
    CHECK_MESSAGE(graph_equal(g, *r, &why), why);
  }
}

namespace {

// A deferred f32 weight whose element i is i * 0.5 (checks the writer's chunking: every byte must
// be asked for exactly once, in order); optionally fails at a given offset.
struct RampFill final : WeightFill {
  mutable uint64_t next = 0;
  mutable int calls = 0;
  uint64_t fail_at = UINT64_MAX;
  Status fill(uint64_t offset, uint8_t* dst, uint64_t n) const override {
    ++calls;
    if (offset != next || offset % 4 != 0 || n % 4 != 0)
      return status_error(StatusCode::kInternal, "unexpected range %llu +%llu",
                          static_cast<unsigned long long>(offset),
                          static_cast<unsigned long long>(n));
    if (offset >= fail_at) return status_error(StatusCode::kOutOfRange, "ramp stops here");
    for (uint64_t i = 0; i < n; i += 4) {
      const float v = static_cast<float>((offset + i) / 4) * 0.5f;
      std::memcpy(dst + i, &v, 4);
    }
    next = offset + n;
    return Status::ok();
  }
};

}  // namespace

TEST_CASE("model file: deferred weights are streamed in chunks; progress is reported") {
  TempDir dir;
  // 5 M floats (20 MB): more than two writer chunks of kWriteChunkBytes.
  const int64_t n = 5 * 1024 * 1024;
  auto fill = std::make_shared<RampFill>();
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 8);
  const ValueId x = b.input("x", DType::kF32, Shape::of({Dim::sym(seq), Dim::fixed(n / 1024)}));
  const ValueId w = b.weight_deferred("w", DType::kF32, Shape::fixed({1024, n / 1024}), fill);
  b.output(b.matmul(x, w, kNoValue, "mm"), "y");
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());

  struct Seen {
    uint64_t last = 0, total = 0;
    int calls = 0;
    bool monotonic = true;
  } seen;
  WriteOptions wo;
  wo.user = &seen;
  wo.progress = [](void* user, uint64_t done, uint64_t total) {
    auto* s = static_cast<Seen*>(user);
    s->monotonic = s->monotonic && done >= s->last;
    s->last = done;
    s->total = total;
    ++s->calls;
  };
  const std::string path = dir.file("m.laya");
  const Status st = model_write(*g, path, wo);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  CHECK(fill->calls == static_cast<int>((n * 4 + kWriteChunkBytes - 1) / kWriteChunkBytes));
  CHECK(seen.monotonic);
  CHECK(seen.calls >= 1);
  CHECK(seen.last == seen.total);
  CHECK(seen.total == static_cast<uint64_t>(std::filesystem::file_size(path)));

  Result<Graph> back = model_load(path);
  REQUIRE_MESSAGE(back.is_ok(), back.status().to_string());
  const Value& v = back->values[back->find_value("w")];
  REQUIRE(v.nbytes == static_cast<uint64_t>(n) * 4);
  CHECK(v.fill == nullptr);
  bool ramp = true;
  for (int64_t i = 0; i < n && ramp; i += 4099) {
    float f;
    std::memcpy(&f, v.data + 4 * i, 4);
    ramp = f == static_cast<float>(i) * 0.5f;
  }
  CHECK(ramp);

  // A fill that fails: its error (with the weight's name) is returned, nothing is left behind.
  auto broken = std::make_shared<RampFill>();
  broken->fail_at = kWriteChunkBytes;
  g->values[g->find_value("w")].fill = broken;
  const std::string bad = dir.file("bad.laya");
  const Status s2 = model_write(*g, bad);
  CHECK(s2.code() == StatusCode::kOutOfRange);
  CHECK(mentions(s2, "weight 'w'"));
  CHECK(mentions(s2, "ramp stops here"));
  CHECK_FALSE(exists(bad));
  CHECK_FALSE(exists(bad + ".tmp"));
}

// Error messages print shapes read from files; extreme values must print without overflow.
TEST_CASE("model file: dimensions with extreme values print without overflow") {
  const std::vector<Symbol> syms = {{"seq", 1, 8}};
  Dim d = Dim::sym(0, INT32_MIN);
  d.c = INT64_MIN;
  CHECK(dim_to_string(d, syms) == "-2147483648 * seq - 9223372036854775808");
}
