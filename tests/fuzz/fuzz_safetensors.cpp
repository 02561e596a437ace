// Fuzz target: safetensors images through frontends/safetensors, one file or a sharded checkpoint.
//
// An input is one or more parts separated by kSeparator (see safetensors.dict):
//   one part     a .safetensors image: SafetensorsFile::parse (header JSON, dtypes, shapes,
//                offsets, coverage of the data), then every tensor's bytes read end to end (a view
//                past the input is an ASan report), find() of each name, the metadata
//   two or more  part 0 is a model.safetensors.index.json, parts 1.. are the shards in the order
//                weight_map first names them (SafetensorsCheckpoint::from_index: shard names,
//                tensors listed / stored / duplicated across shards); a shard with no part is an
//                I/O error, as a missing file is
// In both forms the whole input is also parsed as one .safetensors image. Any input must give a
// Status, never a crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/safetensors.h"

namespace {

using namespace laya;
using frontends::SafetensorsCheckpoint;
using frontends::SafetensorsFile;
using frontends::StTensor;

constexpr std::string_view kSeparator = "\n--laya-fuzz-shard--\n";

volatile uint64_t g_sink;  // keeps the reads of tensor bytes from being optimized away

uint64_t read_file(const SafetensorsFile& f, const uint8_t* begin, const uint8_t* end) {
  uint64_t h = f.size();
  for (const StTensor& t : f.tensors()) {
    if (f.find(t.name) == nullptr) std::abort();  // a listed tensor must be found
    ir::DType dt;
    h += frontends::st_dtype_to_ir(t.dtype, &dt) + t.elements;
    h += frontends::st_shape_string(t.shape).size() +
         std::string_view(st_dtype_name(t.dtype)).size();
    if (t.nbytes > 0 && (t.data < begin || t.data > end || t.nbytes > uint64_t(end - t.data)))
      std::abort();  // a view outside the image
    for (uint64_t i = 0; i < t.nbytes; ++i) h += t.data[i];
  }
  for (const auto& [k, v] : f.metadata()) h += k.size() + v.size();
  return h;
}

uint64_t parse_file(std::string_view image, const std::string& name) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(image.data());
  Result<std::shared_ptr<SafetensorsFile>> f =
      SafetensorsFile::parse(p, image.size(), nullptr, name);
  return f.is_ok() ? read_file(**f, p, p + image.size()) : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  uint64_t h = parse_file(in, "input");
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t next = in.find(kSeparator, at);
    parts.push_back(
        in.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) break;
    at = next + kSeparator.size();
  }
  if (parts.size() < 2) {
    g_sink = h;
    return 0;
  }
  size_t next_part = 1;
  Result<SafetensorsCheckpoint> ck = SafetensorsCheckpoint::from_index(
      parts[0], "model.safetensors.index.json",
      [&](const std::string& shard) -> Result<std::shared_ptr<SafetensorsFile>> {
        if (next_part >= parts.size())
          return Status(StatusCode::kIoError, "no part for shard '" + shard + "'");
        const std::string_view image = parts[next_part++];
        return SafetensorsFile::parse(reinterpret_cast<const uint8_t*>(image.data()), image.size(),
                                      nullptr, shard);
      });
  if (ck.is_ok()) {
    for (const auto& [t, f] : ck->all()) {
      std::shared_ptr<SafetensorsFile> holder;
      if (ck->find(t->name, &holder) != t || holder.get() != f) std::abort();
    }
    for (const std::shared_ptr<SafetensorsFile>& f : ck->files())
      h += read_file(*f, data, data + size);
    h += ck->source_paths().size();
  }
  g_sink = h;
  return 0;
}
