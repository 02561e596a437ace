// model_load / model_parse: .laya -> Graph, every check in the order listed in ir/model_file.h.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "ir/file_io.h"
#include "ir/laya_generated.h"
#include "ir/model_file.h"

namespace laya::ir {

// The schema enums mirror the IR's X-macro lists by position.
#define DTYPE(name, Name, block_elems, block_bytes, kind)                              \
  static_assert(static_cast<int>(fb::DType::name) == static_cast<int>(DType::k##Name), \
                "laya.fbs DType differs from ir/dtypes.inc at " #name);
#include "ir/dtypes.inc"
#undef DTYPE
static_assert(static_cast<int>(fb::DType::MAX) + 1 == static_cast<int>(DType::kCount),
              "laya.fbs DType has a different number of values than ir/dtypes.inc");
#define OP(name, Name, min_in, max_in, n_out)                                    \
  static_assert(static_cast<int>(fb::Op::name) == static_cast<int>(Op::k##Name), \
                "laya.fbs Op differs from ir/ops.inc at " #name);
#include "ir/ops.inc"
#undef OP
static_assert(static_cast<int>(fb::Op::MAX) + 1 == static_cast<int>(Op::kCount),
              "laya.fbs Op has a different number of values than ir/ops.inc");
static_assert(static_cast<int>(fb::QuantKind::none) == static_cast<int>(QuantKind::kNone) &&
              static_cast<int>(fb::QuantKind::per_tensor) ==
                  static_cast<int>(QuantKind::kPerTensor) &&
              static_cast<int>(fb::QuantKind::per_channel) ==
                  static_cast<int>(QuantKind::kPerChannel) &&
              static_cast<int>(fb::QuantKind::block) == static_cast<int>(QuantKind::kBlock));
static_assert(static_cast<int>(fb::ValueKind::input) == static_cast<int>(ValueKind::kInput) &&
              static_cast<int>(fb::ValueKind::weight) == static_cast<int>(ValueKind::kWeight) &&
              static_cast<int>(fb::ValueKind::activation) ==
                  static_cast<int>(ValueKind::kActivation) &&
              static_cast<int>(fb::ValueKind::state) == static_cast<int>(ValueKind::kState));
static_assert(
    static_cast<int>(fb::InputRole::none) == static_cast<int>(InputRole::kNone) &&
    static_cast<int>(fb::InputRole::token_ids) == static_cast<int>(InputRole::kTokenIds) &&
    static_cast<int>(fb::InputRole::positions) == static_cast<int>(InputRole::kPositions) &&
    static_cast<int>(fb::InputRole::key_mask) == static_cast<int>(InputRole::kKeyMask) &&
    static_cast<int>(fb::InputRole::seq_ids) == static_cast<int>(InputRole::kSeqIds) &&
    static_cast<int>(fb::InputRole::cache_cells) == static_cast<int>(InputRole::kCacheCells) &&
    static_cast<int>(fb::InputRole::cell_positions) ==
        static_cast<int>(InputRole::kCellPositions) &&
    static_cast<int>(fb::InputRole::cell_seq_ids) == static_cast<int>(InputRole::kCellSeqIds) &&
    static_cast<int>(fb::InputRole::logit_rows) == static_cast<int>(InputRole::kLogitRows));
static_assert(FLATBUFFERS_LITTLEENDIAN, "the .laya size prefix is read as little endian");

namespace {

using ull = unsigned long long;

constexpr uint64_t kHeaderBytes = 12;  // size prefix, root offset, identifier

std::string str(const flatbuffers::String* s) {
  return s ? s->str() : std::string();
}

// Vectors of 64-bit elements: the FlatBuffers 2.0.8 verifier checks the length field's alignment
// only, so a crafted file could make the elements misaligned (an empty vector's data need not be
// aligned: the builder does not pad it).
template <class T>
bool aligned_elements(const flatbuffers::Vector<T>* v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

// Whether dim_min / dim_max (ir/types.h) evaluate `d` without int64 overflow for these symbol
// bounds; the loader rejects dimensions for which they would not.
bool dim_bounds_fit(const Dim& d, const std::vector<Symbol>& symbols) {
  for (int pass = 0; pass < 2; ++pass) {  // 0: dim_min's choice of bound, 1: dim_max's
    int64_t v = d.c;
    for (size_t i = 0; i < symbols.size() && i < static_cast<size_t>(kMaxSymbols); ++i) {
      const bool use_min = (d.coef[i] >= 0) == (pass == 0);
      int64_t term = 0;
      if (__builtin_mul_overflow(int64_t{d.coef[i]}, use_min ? symbols[i].min : symbols[i].max,
                                 &term) ||
          __builtin_add_overflow(v, term, &v))
        return false;
    }
  }
  return true;
}

class Parser {
 public:
  Parser(const uint8_t* data, uint64_t size, bool verify_tables)
      : data_(data), size_(size), verify_tables_(verify_tables) {}

  Result<Graph> parse();

 private:
  Status header();
  Status section();
  Status symbols();
  Status values();
  Status nodes();
  Status metadata();
  Status extent(const fb::Extent& e, const std::string& who, Blob* out) const;
  Status value(uint32_t id, const fb::Value& fv, Value* v) const;

  const uint8_t* data_;
  uint64_t size_;
  bool verify_tables_;
  uint64_t fb_end_ = 0;  // 4 + fb_size
  const fb::Model* model_ = nullptr;
  const uint8_t* section_ = nullptr;
  uint64_t section_size_ = 0;
  Graph g_;
};

Status Parser::header() {
  if (size_ < kHeaderBytes)
    return status_error(StatusCode::kFileTruncated,
                        "file has %llu bytes, fewer than the %llu-byte header (size prefix, root "
                        "offset, identifier)",
                        static_cast<ull>(size_), static_cast<ull>(kHeaderBytes));
  if (std::memcmp(data_ + 8, fb::ModelIdentifier(), 4) != 0)
    return status_error(StatusCode::kFileBadIdentifier,
                        "file identifier is %02x %02x %02x %02x, expected \"LAYA\"", data_[8],
                        data_[9], data_[10], data_[11]);
  uint32_t fb_size = 0;
  std::memcpy(&fb_size, data_, 4);
  if (uint64_t{fb_size} > size_ - 4)
    return status_error(StatusCode::kFileTruncated,
                        "the size prefix announces a %llu-byte FlatBuffer, but only %llu bytes "
                        "follow it",
                        static_cast<ull>(fb_size), static_cast<ull>(size_ - 4));
  fb_end_ = 4 + uint64_t{fb_size};
  if (fb_size < 8 || fb_end_ >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return status_error(StatusCode::kFileCorrupt, "FlatBuffer size %llu is out of range",
                        static_cast<ull>(fb_size));

  // The version fields, verified on their own so a newer major reports its version.
  flatbuffers::Verifier hv(data_, fb_end_);
  const flatbuffers::uoffset_t root = hv.VerifyOffset(4);
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(data_ + 4 + root);
  if (root == 0 || !table->VerifyTableStart(hv) ||
      !table->VerifyField<uint16_t>(hv, fb::Model::VT_FORMAT_MAJOR, 2) ||
      !table->VerifyField<uint16_t>(hv, fb::Model::VT_FORMAT_MINOR, 2))
    return status_error(StatusCode::kFileCorrupt, "the root table header does not verify");
  const uint16_t major = table->GetField<uint16_t>(fb::Model::VT_FORMAT_MAJOR, 0);
  const uint16_t minor = table->GetField<uint16_t>(fb::Model::VT_FORMAT_MINOR, 0);
  if (major != kModelFormatMajor)
    return status_error(StatusCode::kFileUnsupportedVersion,
                        "format version %u.%u; this loader reads %u.x", major, minor,
                        kModelFormatMajor);

  flatbuffers::Verifier verifier(data_, fb_end_);
  if (verify_tables_ && !fb::VerifySizePrefixedModelBuffer(verifier))
    return status_error(StatusCode::kFileCorrupt,
                        "the FlatBuffers verifier rejects the %llu-byte model table",
                        static_cast<ull>(fb_size));
  model_ = fb::GetSizePrefixedModel(data_);
  return Status::ok();
}

Status Parser::section() {
  const uint64_t offset = model_->weights_offset(), size = model_->weights_size();
  if (offset % kModelAlignment != 0)
    return status_error(StatusCode::kFileMisaligned,
                        "weight section offset %llu is not a multiple of %llu",
                        static_cast<ull>(offset), static_cast<ull>(kModelAlignment));
  uint64_t end = 0;
  if (offset < fb_end_ || __builtin_add_overflow(offset, size, &end))
    return status_error(StatusCode::kFileOffsetOutOfBounds,
                        "weight section [%llu, +%llu) overlaps the FlatBuffer (ends at %llu) or "
                        "overflows",
                        static_cast<ull>(offset), static_cast<ull>(size),
                        static_cast<ull>(fb_end_));
  if (end > size_)
    return status_error(StatusCode::kFileTruncated,
                        "the weight section ends at byte %llu, the file has %llu bytes",
                        static_cast<ull>(end), static_cast<ull>(size_));
  section_ = data_ + offset;
  section_size_ = size;
  return Status::ok();
}

Status Parser::extent(const fb::Extent& e, const std::string& who, Blob* out) const {
  const uint64_t offset = e.offset(), size = e.size();
  uint64_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || end > section_size_)
    return status_error(StatusCode::kFileOffsetOutOfBounds,
                        "%s: bytes [%llu, +%llu) lie outside the %llu-byte weight section",
                        who.c_str(), static_cast<ull>(offset), static_cast<ull>(size),
                        static_cast<ull>(section_size_));
  if (offset % kModelAlignment != 0)
    return status_error(StatusCode::kFileMisaligned, "%s: offset %llu is not a multiple of %llu",
                        who.c_str(), static_cast<ull>(offset), static_cast<ull>(kModelAlignment));
  out->data = size > 0 ? section_ + offset : nullptr;
  out->size = size;
  return Status::ok();
}

Status Parser::symbols() {
  const auto* syms = model_->symbols();
  if (!syms) return Status::ok();
  if (syms->size() > static_cast<uint32_t>(kMaxSymbols))
    return status_error(StatusCode::kGraphInvalid, "%u symbols, at most %d", syms->size(),
                        kMaxSymbols);
  for (const fb::Symbol* s : *syms)
    g_.symbols.push_back(Symbol{str(s->name()), s->min(), s->max()});
  return Status::ok();
}

Status Parser::value(uint32_t id, const fb::Value& fv, Value* v) const {
  v->name = str(fv.name());
  const std::string who = "value " + std::to_string(id) + " '" + v->name + "'";
  auto err = [&](StatusCode code, const std::string& what) {
    return status_error(code, "%s: %s", who.c_str(), what.c_str());
  };
  const uint32_t dtype = static_cast<uint32_t>(fv.dtype());
  const uint32_t kind = static_cast<uint32_t>(fv.kind());
  const uint32_t role = static_cast<uint32_t>(fv.role());
  if (!dtype_is_valid(dtype))
    return err(StatusCode::kFileCorrupt,
               "dtype " + std::to_string(dtype) + " is not a known dtype");
  if (kind > static_cast<uint32_t>(fb::ValueKind::MAX))
    return err(StatusCode::kFileCorrupt, "kind " + std::to_string(kind) + " is not a known kind");
  if (role > static_cast<uint32_t>(fb::InputRole::MAX))
    return err(StatusCode::kFileCorrupt, "input role " + std::to_string(role) + " is unknown");
  v->dtype = static_cast<DType>(dtype);
  v->kind = static_cast<ValueKind>(kind);
  v->role = static_cast<InputRole>(role);

  // Shape.
  const auto* dims = fv.shape();
  const uint32_t rank = dims ? dims->size() : 0;
  if (rank > static_cast<uint32_t>(kMaxRank))
    return err(StatusCode::kGraphShapeMismatch,
               "rank " + std::to_string(rank) + " exceeds " + std::to_string(kMaxRank));
  if (!aligned_elements(dims)) return err(StatusCode::kFileCorrupt, "misaligned shape vector");
  v->shape.rank = static_cast<int32_t>(rank);
  for (uint32_t d = 0; d < rank; ++d) v->shape.dims[d].c = dims->Get(d);
  if (const auto* terms = fv.shape_terms()) {
    for (const fb::DimTerm* t : *terms) {
      if (t->dim() >= rank)
        return err(StatusCode::kFileCorrupt, "shape term for dimension " +
                                                 std::to_string(t->dim()) + " of a rank-" +
                                                 std::to_string(rank) + " shape");
      if (t->symbol() >= g_.symbols.size())
        return err(StatusCode::kGraphShapeMismatch, "dimension " + std::to_string(t->dim()) +
                                                        " uses undefined symbol " +
                                                        std::to_string(t->symbol()));
      int32_t& coef = v->shape.dims[t->dim()].coef[t->symbol()];
      if (coef != 0)
        return err(StatusCode::kFileCorrupt, "dimension " + std::to_string(t->dim()) +
                                                 " repeats symbol " + std::to_string(t->symbol()));
      coef = t->coef();
    }
  }
  for (uint32_t d = 0; d < rank; ++d)
    if (!dim_bounds_fit(v->shape.dims[d], g_.symbols))
      return err(StatusCode::kFileSizeOverflow,
                 "the bounds of dimension " + std::to_string(d) + " overflow int64");

  // Quantization.
  if (const fb::Quant* q = fv.quant()) {
    const uint32_t qkind = static_cast<uint32_t>(q->kind());
    if (qkind > static_cast<uint32_t>(fb::QuantKind::MAX))
      return err(StatusCode::kFileCorrupt,
                 "quantization kind " + std::to_string(qkind) + " is unknown");
    v->quant.kind = static_cast<QuantKind>(qkind);
    v->quant.axis = q->axis();
    if (q->scales()) v->quant.scales.assign(q->scales()->begin(), q->scales()->end());
    if (q->zero_points())
      v->quant.zero_points.assign(q->zero_points()->begin(), q->zero_points()->end());
  }

  // Weight bytes.
  const fb::Extent* data = fv.data();
  if (v->kind != ValueKind::kWeight) {
    if (data) return err(StatusCode::kFileCorrupt, "a non-weight value has a data extent");
    return Status::ok();
  }
  if (!v->shape.is_fixed())
    return err(StatusCode::kGraphShapeMismatch, "weights need a fixed shape");
  int64_t count = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    const int64_t n = v->shape.dims[d].c;
    if (n < 0)
      return err(StatusCode::kGraphShapeMismatch,
                 "dimension " + std::to_string(d) + " is " + std::to_string(n));
    if (__builtin_mul_overflow(count, n, &count))
      return err(StatusCode::kFileSizeOverflow,
                 "shape " + shape_to_string(v->shape, g_.symbols) + " overflows an element count");
  }
  Result<uint64_t> bytes = dtype_bytes(v->dtype, count);
  if (!bytes.is_ok())
    return err(bytes.status().code(), "shape " + shape_to_string(v->shape, g_.symbols) + " of " +
                                          dtype_name(v->dtype) + ": " + bytes.status().message());
  if (!data) return err(StatusCode::kFileCorrupt, "a weight without a data extent");
  if (data->size() != *bytes)
    return err(StatusCode::kFileSizeMismatch,
               "stores " + std::to_string(data->size()) + " bytes, shape " +
                   shape_to_string(v->shape, g_.symbols) + " of " + dtype_name(v->dtype) +
                   " needs " + std::to_string(*bytes));
  Blob blob;
  LAYA_RETURN_IF_ERROR(extent(*data, who, &blob));
  v->data = blob.data;
  v->nbytes = blob.size;
  return Status::ok();
}

Status Parser::values() {
  const auto* vals = model_->values();
  if (!vals) return Status::ok();
  g_.values.resize(vals->size());
  for (uint32_t i = 0; i < vals->size(); ++i)
    LAYA_RETURN_IF_ERROR(value(i, *vals->Get(i), &g_.values[i]));
  return Status::ok();
}

Status Parser::nodes() {
  const auto* nodes = model_->nodes();
  if (!nodes) return Status::ok();
  const uint32_t nv = static_cast<uint32_t>(g_.values.size());
  g_.nodes.resize(nodes->size());
  for (uint32_t i = 0; i < nodes->size(); ++i) {
    const fb::Node& fn = *nodes->Get(i);
    Node& n = g_.nodes[i];
    n.name = str(fn.name());
    const uint32_t op = static_cast<uint32_t>(fn.op());
    if (!op_is_valid(op))
      return status_error(StatusCode::kGraphUnknownOp,
                          "node %u '%s': op %u is not one of the %u known ops", i, n.name.c_str(),
                          op, static_cast<unsigned>(Op::kCount));
    n.op = static_cast<Op>(op);
    if (fn.inputs()) {
      for (uint32_t id : *fn.inputs()) {
        if (id >= nv && id != kNoValue)  // kNoValue: an absent optional input (graph_verify)
          return status_error(StatusCode::kGraphUndefinedValue,
                              "node %u '%s' reads value id %u, which does not exist (%u values)", i,
                              n.name.c_str(), id, nv);
        n.inputs.push_back(id);
      }
    }
    if (fn.outputs()) {
      for (uint32_t id : *fn.outputs()) {
        if (id >= nv)
          return status_error(StatusCode::kGraphInvalid,
                              "node %u '%s' writes value id %u, which does not exist (%u values)",
                              i, n.name.c_str(), id, nv);
        Value& v = g_.values[id];
        if (v.kind != ValueKind::kActivation)
          return status_error(StatusCode::kGraphInvalid, "node %u '%s' writes %s value %u '%s'", i,
                              n.name.c_str(), value_kind_name(v.kind), id, v.name.c_str());
        if (v.producer != kNoNode)
          return status_error(StatusCode::kGraphInvalid,
                              "value %u '%s' is written by nodes %u and %u", id, v.name.c_str(),
                              v.producer, i);
        v.producer = i;
        n.outputs.push_back(id);
      }
    }
    if (const fb::Attrs* a = fn.attrs()) {
#define ATTR(type, name, def, lo, hi) n.attrs.name = static_cast<type>(a->name());
#include "ir/attrs.inc"
#undef ATTR
      if (!aligned_elements(a->sizes()))
        return status_error(StatusCode::kFileCorrupt, "node %u '%s': misaligned sizes vector", i,
                            n.name.c_str());
      if (a->sizes()) n.attrs.sizes.assign(a->sizes()->begin(), a->sizes()->end());
    }
  }
  if (model_->inputs()) g_.inputs.assign(model_->inputs()->begin(), model_->inputs()->end());
  if (model_->outputs()) g_.outputs.assign(model_->outputs()->begin(), model_->outputs()->end());
  if (model_->states()) g_.states.assign(model_->states()->begin(), model_->states()->end());
  return Status::ok();
}

Status Parser::metadata() {
  const fb::Metadata* m = model_->metadata();
  if (!m) return Status::ok();
  Metadata& out = g_.meta;
  out.architecture = str(m->architecture());
  out.tokenizer_kind = str(m->tokenizer_kind());
  if (m->tokenizer()) LAYA_RETURN_IF_ERROR(extent(*m->tokenizer(), "tokenizer", &out.tokenizer));
  if (const fb::DecisionConfig* d = m->decision()) {
    DecisionConfig& dc = out.decision;
    dc.present = true;
    dc.max_len = d->max_len();
    dc.head_max_len = d->head_max_len();
    dc.head_layers = d->head_layers();
    dc.temperature[0] = d->temperature_choice();
    dc.temperature[1] = d->temperature_score();
    dc.temperature[2] = d->temperature_noul();
    if (d->temperature_by_options())
      for (const fb::OptionTemperature* t : *d->temperature_by_options())
        dc.temperature_by_options.emplace_back(str(t->key()), t->value());
    if (d->act_costs()) dc.act_costs.assign(d->act_costs()->begin(), d->act_costs()->end());
  }
  out.chat_template = str(m->chat_template());
  if (const fb::Provenance* p = m->provenance()) {
    out.provenance.source = str(p->source());
    out.provenance.converter_version = str(p->converter_version());
    if (p->files())
      for (const fb::SourceFile* f : *p->files())
        out.provenance.files.push_back(SourceFile{str(f->name()), str(f->sha256())});
  }
  if (m->properties())
    for (const fb::Property* p : *m->properties())
      out.properties.emplace_back(str(p->key()), str(p->value()));
  if (m->executables()) {
    uint32_t i = 0;
    for (const fb::Executable* e : *m->executables()) {
      PrecompiledExecutable x;
      x.backend = str(e->backend());
      x.subgraph = str(e->subgraph());
      const std::string who =
          "executable " + std::to_string(i++) + " (" + x.backend + ", '" + x.subgraph + "')";
      if (!e->data()) return status_error(StatusCode::kFileCorrupt, "%s has no data", who.c_str());
      LAYA_RETURN_IF_ERROR(extent(*e->data(), who, &x.bytes));
      out.executables.push_back(std::move(x));
    }
  }
  return Status::ok();
}

Result<Graph> Parser::parse() {
  LAYA_RETURN_IF_ERROR(header());
  LAYA_RETURN_IF_ERROR(section());
  LAYA_RETURN_IF_ERROR(symbols());
  LAYA_RETURN_IF_ERROR(values());
  LAYA_RETURN_IF_ERROR(nodes());
  LAYA_RETURN_IF_ERROR(metadata());
  LAYA_RETURN_IF_ERROR(graph_verify(g_));
  return std::move(g_);
}

// Owns a read-only file mapping.
struct Mapping {
  void* base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, size);
  }
};

Status with_path(const std::string& path, const Status& s) {
  return Status(s.code(), "'" + path + "': " + s.message());
}

}  // namespace

Result<Graph> model_parse(const uint8_t* data, uint64_t size, std::shared_ptr<const void> owner,
                          const LoadOptions& opts) {
  if (size == 0) return status_error(StatusCode::kFileEmpty, "the model file is empty");
  if (data == nullptr || reinterpret_cast<uintptr_t>(data) % kModelAlignment != 0)
    return status_error(StatusCode::kInvalidArgument, "model bytes at %p are not %llu-byte aligned",
                        static_cast<const void*>(data), static_cast<ull>(kModelAlignment));
  Parser parser(data, size, opts.verify_tables);
  Result<Graph> g = parser.parse();
  if (g.is_ok() && owner) g->keepalive.push_back(std::move(owner));
  return g;
}

Result<Graph> model_load(const std::string& path, const LoadOptions& opts) {
  LAYA_ASSIGN_OR_RETURN(ReadFile file, ReadFile::open(path));
  if (file.size() == 0) return status_error(StatusCode::kFileEmpty, "'%s' is empty", path.c_str());
  auto map = std::make_shared<Mapping>();
  map->size = static_cast<size_t>(file.size());
  map->base = ::mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  const int map_errno = errno;
  if (map->base == MAP_FAILED)
    return status_error(StatusCode::kIoError, "cannot map '%s' (%llu bytes): %s", path.c_str(),
                        static_cast<ull>(map->size), std::strerror(map_errno));
  ::madvise(map->base, map->size, MADV_WILLNEED);  // advisory: start reading the weights in
  const auto* bytes = static_cast<const uint8_t*>(map->base);
  Result<Graph> g =
      model_parse(bytes, map->size, std::shared_ptr<const void>(map, map->base), opts);
  if (!g.is_ok()) return with_path(path, g.status());
  return g;
}

}  // namespace laya::ir
