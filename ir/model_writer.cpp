// model_write: Graph -> .laya (layout in ir/model_file.h). The FlatBuffer is built in memory (it
// holds no weight bytes); weights and blobs are streamed from the graph straight into the file.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/file_io.h"
#include "ir/laya_generated.h"
#include "ir/model_file.h"

namespace laya::ir {

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

uint64_t align_up(uint64_t x) {
  return (x + kModelAlignment - 1) / kModelAlignment * kModelAlignment;
}

// A byte range of the graph that goes into the weight section.
struct Piece {
  const uint8_t* data;
  uint64_t size;
  uint64_t offset;        // relative to the section
  const Value* deferred;  // a weight made by its fill (data is null)
};

// Places blobs one after the other, each at a multiple of kModelAlignment.
struct SectionPlan {
  std::vector<Piece> pieces;
  uint64_t end = 0;

  fb::Extent place(const uint8_t* data, uint64_t size, const Value* deferred = nullptr) {
    const uint64_t offset = align_up(end);
    pieces.push_back(Piece{data, size, offset, deferred});
    end = offset + size;
    return fb::Extent(offset, size);
  }
};

Offset<flatbuffers::String> str(FlatBufferBuilder& b, const std::string& s) {
  return b.CreateString(s);
}

Offset<fb::Value> write_value(FlatBufferBuilder& b, const Value& v, const fb::Extent* data) {
  std::vector<int64_t> dims;
  std::vector<fb::DimTerm> terms;
  for (int d = 0; d < v.shape.rank; ++d) {
    dims.push_back(v.shape.dims[d].c);
    for (int s = 0; s < kMaxSymbols; ++s)
      if (v.shape.dims[d].coef[s] != 0)
        terms.emplace_back(static_cast<uint8_t>(d), static_cast<uint8_t>(s),
                           v.shape.dims[d].coef[s]);
  }
  Offset<fb::Quant> quant = 0;
  if (!(v.quant == Quant{}))
    quant = fb::CreateQuant(b, static_cast<fb::QuantKind>(v.quant.kind), v.quant.axis,
                            b.CreateVector(v.quant.scales), b.CreateVector(v.quant.zero_points));
  const auto name = str(b, v.name);
  const auto shape = b.CreateVector(dims);
  const auto shape_terms = b.CreateVectorOfStructs(terms);
  return fb::CreateValue(b, name, static_cast<fb::DType>(v.dtype),
                         static_cast<fb::ValueKind>(v.kind), static_cast<fb::InputRole>(v.role),
                         shape, shape_terms, quant, data);
}

// An attribute as the file stores it: enum attributes as their int32 value.
template <class T>
auto stored(T v) {
  if constexpr (std::is_enum_v<T>)
    return static_cast<std::underlying_type_t<T>>(v);
  else
    return v;
}

Offset<fb::Node> write_node(FlatBufferBuilder& b, const Node& n) {
  const auto name = str(b, n.name);
  const auto inputs = b.CreateVector(n.inputs);
  const auto outputs = b.CreateVector(n.outputs);
  const auto sizes = b.CreateVector(n.attrs.sizes);
  fb::AttrsBuilder ab(b);
#define ATTR(type, name, def, lo, hi) ab.add_##name(stored(n.attrs.name));
#include "ir/attrs.inc"
#undef ATTR
  ab.add_sizes(sizes);
  const auto attrs = ab.Finish();
  return fb::CreateNode(b, static_cast<fb::Op>(n.op), name, inputs, outputs, attrs);
}

Offset<fb::Metadata> write_metadata(FlatBufferBuilder& b, const Metadata& m, SectionPlan* plan) {
  Offset<fb::DecisionConfig> decision = 0;
  if (m.decision.present) {
    const DecisionConfig& d = m.decision;
    std::vector<Offset<fb::OptionTemperature>> by_options;
    for (const auto& [key, t] : d.temperature_by_options)
      by_options.push_back(fb::CreateOptionTemperature(b, str(b, key), t));
    const auto by_options_vec = b.CreateVector(by_options);
    const auto act_costs = b.CreateVector(d.act_costs);
    decision =
        fb::CreateDecisionConfig(b, d.max_len, d.head_max_len, d.head_layers, d.temperature[0],
                                 d.temperature[1], d.temperature[2], by_options_vec, act_costs);
  }
  std::vector<Offset<fb::SourceFile>> files;
  for (const SourceFile& f : m.provenance.files)
    files.push_back(fb::CreateSourceFile(b, str(b, f.name), str(b, f.sha256)));
  const auto files_vec = b.CreateVector(files);
  const auto provenance = fb::CreateProvenance(b, str(b, m.provenance.source),
                                               str(b, m.provenance.converter_version), files_vec);
  std::vector<Offset<fb::Property>> props;
  for (const auto& [key, value] : m.properties)
    props.push_back(fb::CreateProperty(b, str(b, key), str(b, value)));
  const auto props_vec = b.CreateVector(props);
  std::vector<Offset<fb::Executable>> exes;
  for (const PrecompiledExecutable& e : m.executables) {
    const fb::Extent extent = plan->place(e.bytes.data, e.bytes.size);
    exes.push_back(fb::CreateExecutable(b, str(b, e.backend), str(b, e.subgraph), &extent));
  }
  const auto exes_vec = b.CreateVector(exes);
  fb::Extent tokenizer;
  const bool has_tokenizer = m.tokenizer.size > 0;
  if (has_tokenizer) tokenizer = plan->place(m.tokenizer.data, m.tokenizer.size);
  const auto architecture = str(b, m.architecture);
  const auto tokenizer_kind = str(b, m.tokenizer_kind);
  const auto chat_template = str(b, m.chat_template);
  return fb::CreateMetadata(b, architecture, tokenizer_kind, has_tokenizer ? &tokenizer : nullptr,
                            decision, chat_template, provenance, props_vec, exes_vec);
}

Status write_zeros(FileWriter& f, uint64_t n) {
  static const uint8_t kZeros[kModelAlignment] = {};
  if (n > sizeof kZeros)
    return status_error(StatusCode::kInternal, "padding of %llu bytes",
                        static_cast<unsigned long long>(n));
  return f.write(kZeros, n);
}

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

// Streams a deferred weight through `buf` (kWriteChunkBytes, or the weight's size if smaller).
Status write_deferred(FileWriter& f, const Value& v, uint8_t* buf, uint64_t buf_bytes) {
  const uint64_t block = dtype_info(v.dtype).block_bytes;
  const uint64_t chunk = buf_bytes / block * block;
  for (uint64_t at = 0; at < v.nbytes; at += chunk) {
    const uint64_t n = v.nbytes - at < chunk ? v.nbytes - at : chunk;
    Status s = v.fill->fill(at, buf, n);
    if (!s.is_ok()) return Status(s.code(), "weight '" + v.name + "': " + std::string(s.message()));
    LAYA_RETURN_IF_ERROR(f.write(buf, n));
  }
  return Status::ok();
}

// Writes the whole image: FlatBuffer, padding, then every piece at its offset.
Status write_image(FileWriter& f, const uint8_t* fb_data, uint64_t fb_total,
                   uint64_t weights_offset, const SectionPlan& plan, const WriteOptions& opts) {
  LAYA_RETURN_IF_ERROR(f.write(fb_data, fb_total));
  LAYA_RETURN_IF_ERROR(write_zeros(f, weights_offset - fb_total));
  const uint64_t total = weights_offset + plan.end;
  // One buffer for every deferred weight, sized for the largest chunk any of them needs.
  uint64_t buf_bytes = 0;
  for (const Piece& p : plan.pieces)
    if (p.deferred != nullptr) {
      const uint64_t block = dtype_info(p.deferred->dtype).block_bytes;
      const uint64_t chunk =
          std::max<uint64_t>(kWriteChunkBytes / block * block, block);  // at least one block
      buf_bytes = std::max(buf_bytes, std::min(p.size, chunk));
    }
  std::unique_ptr<uint8_t, FreeDeleter> buf;
  if (buf_bytes > 0) {
    buf.reset(static_cast<uint8_t*>(std::malloc(buf_bytes)));
    if (!buf)
      return status_error(StatusCode::kResourceExhausted, "cannot allocate a %llu-byte buffer",
                          static_cast<unsigned long long>(buf_bytes));
  }
  uint64_t pos = 0;  // within the section
  for (const Piece& p : plan.pieces) {
    LAYA_RETURN_IF_ERROR(write_zeros(f, p.offset - pos));
    if (p.deferred != nullptr)
      LAYA_RETURN_IF_ERROR(write_deferred(f, *p.deferred, buf.get(), buf_bytes));
    else
      LAYA_RETURN_IF_ERROR(f.write(p.data, p.size));
    pos = p.offset + p.size;
    if (opts.progress != nullptr) opts.progress(opts.user, weights_offset + pos, total);
  }
  return f.commit();
}

}  // namespace

Status model_write(const Graph& g, const std::string& path, const WriteOptions& opts) {
  Status valid = graph_verify(g);
  if (!valid.is_ok())
    return Status(valid.code(),
                  "refusing to write an invalid graph to '" + path + "': " + valid.message());

  // Plan the weight section and build the FlatBuffer (every scalar stored, even at its default,
  // so weights_offset can be patched in once the FlatBuffer's size is known).
  SectionPlan plan;
  FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(true);

  std::vector<Offset<fb::Symbol>> symbols;
  for (const Symbol& s : g.symbols)
    symbols.push_back(fb::CreateSymbol(b, str(b, s.name), s.min, s.max));
  const auto symbols_vec = b.CreateVector(symbols);
  std::vector<Offset<fb::Value>> values;
  for (const Value& v : g.values) {
    if (v.kind == ValueKind::kWeight) {
      const fb::Extent extent = plan.place(v.data, v.nbytes, v.fill ? &v : nullptr);
      values.push_back(write_value(b, v, &extent));
    } else {
      values.push_back(write_value(b, v, nullptr));
    }
  }
  const auto values_vec = b.CreateVector(values);
  std::vector<Offset<fb::Node>> nodes;
  for (const Node& n : g.nodes) nodes.push_back(write_node(b, n));
  const auto nodes_vec = b.CreateVector(nodes);
  const auto inputs_vec = b.CreateVector(g.inputs);
  const auto outputs_vec = b.CreateVector(g.outputs);
  const auto meta = write_metadata(b, g.meta, &plan);
  const auto states_vec = b.CreateVector(g.states);
  const auto root = fb::CreateModel(b, kModelFormatMajor, kModelFormatMinor, /*weights_offset=*/0,
                                    plan.end, symbols_vec, values_vec, nodes_vec, inputs_vec,
                                    outputs_vec, meta, states_vec);
  fb::FinishSizePrefixedModelBuffer(b, root);
  const uint64_t fb_total = b.GetSize();
  const uint64_t weights_offset = align_up(fb_total);
  if (!fb::GetMutableSizePrefixedModel(b.GetBufferPointer())->mutate_weights_offset(weights_offset))
    return status_error(StatusCode::kInternal, "weights_offset field missing from the FlatBuffer");

  LAYA_ASSIGN_OR_RETURN(FileWriter f, FileWriter::create(path));
  return write_image(f, b.GetBufferPointer(), fb_total, weights_offset, plan, opts);
}

}  // namespace laya::ir
