// A safetensors reader: memory-mapped files, every offset and shape checked before use, sharded
// checkpoints through `*.safetensors.index.json`. Nothing is copied: a tensor is a view into the
// mapping, which the file object keeps alive (share it through `owner()`).
//
// ---- The format (huggingface/safetensors) -------------------------------------------------------
//
//   u64 N (little endian) | N bytes of JSON header | data
//   header: {"<tensor>": {"dtype": "F16", "shape": [d0, ...], "data_offsets": [begin, end]}, ...,
//            "__metadata__": {"key": "value", ...}?}
//   offsets are relative to the start of the data and select [begin, end).
//
// ---- Checks, each an error naming the file (and the tensor) -------------------------------------
//
//   cannot open / not a regular file / cannot map                     kIoError
//   fewer than 8 bytes                                                kFileTruncated
//   N larger than the rest of the file, or above kMaxHeaderBytes      kFileTruncated / kFileCorrupt
//   header is not JSON, not an object, a tensor entry is not an
//   object with exactly dtype / shape / data_offsets of the right
//   JSON types, a dimension or offset is negative or not an integer,
//   __metadata__ is not an object of strings                          kFileCorrupt
//   unknown dtype name                                                kFileCorrupt
//   rank above kMaxRank, element count or bytes overflow int64        kFileSizeOverflow
//   begin > end, or end past the data                                 kFileOffsetOutOfBounds
//   end - begin != elements x dtype size                              kFileSizeMismatch
//   two tensors overlap, or bytes between / after them that no
//   tensor covers (the format requires the data to be fully indexed)  kFileCorrupt
//  Sharded checkpoints (SafetensorsCheckpoint):
//   index not JSON / no "weight_map" object / a value not a string    kFileCorrupt
//   a shard name with a path separator or "..", or a missing shard    kFileCorrupt / kIoError
//   a tensor the index maps to a shard that lacks it, a tensor in a
//   shard the index does not list, or one name in two shards          kFileCorrupt
//
// Any input, however damaged, returns a Status (tests/frontends/test_safetensors.cpp: every
// truncation and every single-byte change of a file, under ASan + UBSan in CI).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/types.h"

namespace laya::frontends {

// The element types of the format. Only kF32 / kF16 / kBF16 become weights; the others are read
// (and checked) so a checkpoint carrying e.g. an I64 buffer can be listed and its tensor named in
// errors.
enum class StDType : uint8_t { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
const char* st_dtype_name(StDType t);  // "F16", ... (as the file spells it)
int st_dtype_size(StDType t);          // bytes per element
// The IR dtype of a float tensor (kF32 / kF16 / kBF16); false for the others.
bool st_dtype_to_ir(StDType t, ir::DType* out);

struct StTensor {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<int64_t> shape;  // rank <= ir::kMaxRank; an empty shape is a scalar
  int64_t elements = 0;
  const uint8_t* data = nullptr;  // into the mapping (null when nbytes == 0)
  uint64_t nbytes = 0;
  uint64_t file_offset = 0;  // of the first byte, from the start of the file
};

// "[1024, 3072]".
std::string st_shape_string(const std::vector<int64_t>& shape);

// One mapped .safetensors file.
class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's cap

  // Maps `path` read-only and checks it completely (see the list above).
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Parses an image already in memory (`owner` keeps [data, data + size) alive; may be null when
  // the caller guarantees the lifetime). `name` is used in messages. For tests.
  static Result<std::shared_ptr<SafetensorsFile>> parse(const uint8_t* data, uint64_t size,
                                                        std::shared_ptr<const void> owner,
                                                        const std::string& name);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // In file order (by offset).
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(const std::string& name) const;  // linear; null when absent
  // The "__metadata__" strings, in file order.
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // Drops the mapped pages of `t` from memory (madvise DONTNEED; the bytes are read again from
  // the file if touched later). Converters call it after a tensor is written, so a conversion's
  // resident memory stays near one tensor. A no-op for parsed in-memory images.
  void release(const StTensor& t) const { release_range(t.file_offset, t.nbytes); }
  // The same for any byte range of the file (whole pages inside it only).
  void release_range(uint64_t file_offset, uint64_t nbytes) const;

 private:
  SafetensorsFile() = default;
  Status parse_header();

  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  std::shared_ptr<const void> owner_;
  std::vector<StTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// A checkpoint: one `model.safetensors`, or the shards a `model.safetensors.index.json` lists.
class SafetensorsCheckpoint {
 public:
  // `path` is a .safetensors file, an index .json, or a directory holding
  // `model.safetensors.index.json` (preferred when both exist) or `model.safetensors`.
  static Result<SafetensorsCheckpoint> open(const std::string& path);

  // Opens the shard a weight_map names (a plain file name, already checked); returns a non-null
  // file or the error.
  using ShardOpener = std::function<Result<std::shared_ptr<SafetensorsFile>>(const std::string&)>;
  // The index form of open() over the index's text: `index_name` names it in messages and is the
  // first source path; each distinct shard is opened once, in weight_map order, through
  // `open_shard` (open() maps `<index dir>/<shard>`; the fuzzer and tests parse bytes). Every
  // check of the list above applies.
  static Result<SafetensorsCheckpoint> from_index(std::string_view index_json,
                                                  const std::string& index_name,
                                                  const ShardOpener& open_shard);

  // The tensor named `name` and the file holding it; null when absent.
  const StTensor* find(const std::string& name,
                       std::shared_ptr<SafetensorsFile>* file = nullptr) const;
  // Every tensor, shard by shard in index order, each in file order.
  std::vector<std::pair<const StTensor*, const SafetensorsFile*>> all() const;
  const std::vector<std::shared_ptr<SafetensorsFile>>& files() const { return files_; }
  // The files read (index first, then shards), for provenance.
  const std::vector<std::string>& source_paths() const { return paths_; }

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::vector<std::string> paths_;
};

}  // namespace laya::frontends
