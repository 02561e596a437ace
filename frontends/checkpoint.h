// What every importer shares: config JSON with messages naming the file and key, strict tensor
// accounting (a missing, extra or mis-shaped tensor is an error naming it and both shapes), weights
// in the requested format without copying them into the heap, the tokenizer and its special ids,
// and provenance. Internal to frontends/ (the public API is frontends/import.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/import.h"
#include "frontends/safetensors.h"
#include "ir/builder.h"
#include "runtime/text/json.h"

namespace laya::frontends {

// ---- files and JSON --------------------------------------------------------------------------

std::string path_join(const std::string& dir, const std::string& name);
bool path_exists(const std::string& path);
bool path_is_dir(const std::string& path);
// The whole file (kIoError naming it).
Result<std::string> read_file(const std::string& path);
// Parses `path` as JSON (kInvalidArgument naming the file and the line / column).
Result<json::Value> read_json(const std::string& path);

// Typed lookups in a JSON object read from `file` (named in every message).
class JsonFields {
 public:
  JsonFields(const json::Value& obj, std::string file) : obj_(obj), file_(std::move(file)) {}
  const json::Value* find(const char* key) const { return obj_.find(key); }
  // An integer (a JSON bool is refused), `def` when absent or null.
  Result<int64_t> integer(const char* key, std::optional<int64_t> def = std::nullopt) const;
  Result<double> number(const char* key, std::optional<double> def = std::nullopt) const;
  Result<bool> boolean(const char* key, std::optional<bool> def = std::nullopt) const;
  Result<std::string> string(const char* key, std::optional<std::string> def = std::nullopt) const;
  Status error(const char* key, const std::string& what) const;
  const std::string& file() const { return file_; }

 private:
  const json::Value& obj_;
  std::string file_;
};

// ---- weights ---------------------------------------------------------------------------------

// How a tensor is used, which decides its stored dtype (see WeightFormat in import.h).
enum class WeightRole : uint8_t {
  kMatrix,  // a matmul weight [N, K]
  kTable,   // an embedding table [V, D]
  kVector,  // a norm gamma / beta or a bias: always f32
};

// The checkpoint's tensors, handed out once each as graph weights in the requested format.
class WeightSource {
 public:
  // `opts.format` for every tensor but those an override matches (checked by check_formats).
  WeightSource(SafetensorsCheckpoint ck, const ImportOptions& opts, std::string what)
      : ck_(std::move(ck)),
        format_(opts.format),
        overrides_(opts.overrides),
        what_(std::move(what)) {}

  // Tensor `name` as a weight of `b` named `name`, checked to have `shape`, in the format its
  // role and the options give. Errors name the tensor and both shapes; a tensor of another dtype
  // than F32 / F16 / BF16 is refused.
  Result<ir::ValueId> take(ir::GraphBuilder& b, const std::string& name,
                           const std::vector<int64_t>& shape, WeightRole role);
  // Checks that tensor `name` exists with `shape` and marks it used without making a weight (a
  // buffer the format requires but the graph does not read, e.g. Laya's `temperature`).
  Status expect(const std::string& name, const std::vector<int64_t>& shape);
  // Whether the checkpoint has `name` (to tell optional tensors apart).
  bool has(const std::string& name) const { return ck_.find(name) != nullptr; }
  // Marks a tensor the architecture defines but the graph does not use (e.g. BERT's pooler).
  void ignore(const std::string& name);
  // kInvalidArgument listing the tensors nobody took or ignored (the first few, and the count).
  Status check_all_used() const;

  const SafetensorsCheckpoint& checkpoint() const { return ck_; }

 private:
  SafetensorsCheckpoint ck_;
  WeightFormat format_;
  std::vector<FormatOverride> overrides_;
  std::string what_;  // "Laya checkpoint", for messages
  std::vector<std::string> used_;
};

// Whether `name` matches `pattern` ('*' matches any run of characters).
bool glob_match(const std::string& pattern, const std::string& name);
// kInvalidArgument when the options mix kSource with a conversion format.
Status check_formats(const ImportOptions& opts);

// ---- tokenizer -------------------------------------------------------------------------------

struct SpecialToken {
  std::string role;     // "cls", "sep", "pad", "mask", "unk"
  std::string content;  // "[CLS]"
  int64_t id = -1;
};

struct TokenizerFiles {
  std::shared_ptr<std::string> json;  // tokenizer.json bytes, embedded as they are
  std::vector<SpecialToken> special;  // the roles the configs name, in the order above
  std::vector<std::string> files;     // paths read
};

// Reads `dir`/tokenizer.json and resolves the special tokens named by tokenizer_config.json,
// overridden by special_tokens_map.json (as transformers does), to ids through tokenizer.json's
// added tokens, then its model vocabulary, then tokenizer_config.json's added_tokens_decoder.
// `required` roles must be named and found (kInvalidArgument naming the role and the files).
Result<TokenizerFiles> read_tokenizer(const std::string& dir,
                                      const std::vector<std::string>& required);

// Stores the tokenizer in `g` (kind "hf-tokenizer-json", bytes kept alive by the graph) and the
// special tokens as properties "tokenizer.<role>_id" / "tokenizer.<role>_token".
void attach_tokenizer(ir::Graph& g, const TokenizerFiles& tok);

// ---- provenance ------------------------------------------------------------------------------

// Fills g.meta.provenance: `source` (the directory), the converter version and, when
// opts.hash_sources, the sha256 of every file in `files` (named relative to `dir`).
Status set_provenance(ir::Graph& g, const std::string& dir, const std::vector<std::string>& files,
                      const ImportOptions& opts);

void add_property(ir::Graph& g, const std::string& key, const std::string& value);

// Suggested session bucket bounds as properties "buckets.<symbol>" = "b1,b2,...": tokens at
// powers of two from 64 up to max_tokens (one memory plan per doubling: requests range from one
// short question, ~50 tokens, to 64 rows of max_len), rows {1, 4, 16, max}, options {4, 16, 64,
// max} (max_options 0: no options symbol). Bounds above a symbol's max are dropped.
void add_bucket_properties(ir::Graph& g, int64_t max_tokens, int64_t max_rows, int64_t max_options);

}  // namespace laya::frontends
