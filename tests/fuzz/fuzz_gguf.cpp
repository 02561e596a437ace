// Fuzz target: a GGUF image through frontends/gguf (File::parse: header, metadata, tensor table,
// tensor views), then everything a successful parse hands on: every value through its typed
// accessors, every tensor's bytes (read end to end, so a view past the input is an ASan report),
// decoder_params + check_decoder_tensors, tokenizer_data, and the vocabulary it describes through
// the tokenizer library (frontends/gguf_tokenizer: the llama.cpp-style tokenizer the decoder
// uses; encode / decode of a few strings). Any input must give a Status, never a crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/gguf.h"
#include "frontends/gguf_tokenizer.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace {

using namespace laya;
namespace gguf = laya::frontends::gguf;

constexpr size_t kMaxVocab = 4096;  // larger vocabularies are not built into a tokenizer

volatile uint64_t g_sink;  // keeps the reads of tensor bytes and values from being optimized away

void read_value(const gguf::Value& v, uint64_t* h) {
  (void)gguf::value_type_name(v.type);
  *h += v.is_integer() + 2 * v.is_float();
  if (Result<int64_t> i = v.as_int(); i.is_ok()) *h += static_cast<uint64_t>(*i);
  if (Result<double> f = v.as_float(); f.is_ok()) *h += static_cast<uint64_t>(*f == *f);
  if (Result<bool> b = v.as_bool(); b.is_ok()) *h += *b;
  if (Result<std::string_view> s = v.as_string(); s.is_ok()) *h += s->size();
  if (v.type != gguf::ValueType::kArray) return;
  for (std::string_view s : v.strings) *h += s.empty() ? 0 : static_cast<uint8_t>(s.back());
  for (const gguf::Value& a : v.arrays) read_value(a, h);
  if (v.elem_type == gguf::ValueType::kString || v.elem_type == gguf::ValueType::kArray) return;
  gguf::Value elem;
  elem.type = v.elem_type;
  for (uint64_t i = 0; i < v.count; ++i) {
    if (elem.is_float())
      *h += static_cast<uint64_t>(v.float_at(i) == v.float_at(i));
    else
      *h += static_cast<uint64_t>(v.int_at(i));
  }
}

void run_tokenizer(const gguf::File& f) {
  Result<gguf::TokenizerData> t = gguf::tokenizer_data(f);
  if (!t.is_ok() || t->tokens.size() > kMaxVocab) return;
  Result<std::unique_ptr<tok::Tokenizer>> tk = gguf::gguf_tokenizer(f);
  if (!tk.is_ok()) return;
  std::vector<int32_t> ids;
  for (std::string_view text : {"Hello world, the 2024 t\xc3\xa9st!\n", "  a  \t<s></s>",
                                "\xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80 <|im_end|>"}) {
    ids.clear();
    tok::EncodeOptions opts;
    opts.add_special_tokens = true;
    if (!(*tk)->encode(text, opts, &ids).is_ok()) continue;
    std::string back;
    (void)(*tk)->decode(ids, false, &back);
    for (int32_t id : ids) (void)(*tk)->token_to_piece(id, true, &back);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<gguf::File> f = gguf::File::parse(data, size);
  if (!f.is_ok()) return 0;
  uint64_t h = f->version() + f->alignment() + f->data_offset();
  for (const gguf::KeyValue& kv : f->metadata()) {
    h += kv.key.size();
    if (f->find(kv.key) == nullptr) std::abort();  // a listed key must be found
    read_value(kv.value, &h);
    (void)f->get_int(kv.key);
    (void)f->get_float(kv.key);
    (void)f->get_bool(kv.key);
    (void)f->get_string(kv.key);
    (void)f->get_strings(kv.key);
  }
  const uint8_t* end = data + size;
  for (const gguf::TensorInfo& t : f->tensors()) {
    if (f->tensor(t.name) == nullptr) std::abort();
    (void)gguf::ggml_type_name(t.ggml_type);
    if (t.bytes > 0 && (t.data < data || t.data > end || t.bytes > uint64_t(end - t.data)))
      std::abort();  // a view outside the file
    for (uint64_t i = 0; i < t.bytes; ++i) h += t.data[i];
  }
  if (Result<gguf::DecoderParams> p = gguf::decoder_params(*f); p.is_ok()) {
    (void)gguf::check_decoder_tensors(*f, *p);
    (void)gguf::rope_mode_for_arch(p->arch);
    h += gguf::arch_permutes_qk(p->arch);
  }
  run_tokenizer(*f);
  g_sink = h;
  return 0;
}
