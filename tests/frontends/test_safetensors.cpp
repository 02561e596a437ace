// The safetensors reader: well-formed files, one error per check listed in
// frontends/safetensors.h, sharded checkpoints, page release.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "frontends/safetensors.h"
#include "tests/frontends/frontends_util.h"
#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::frontends;
using laya::test::StEntry;

namespace {

Result<std::shared_ptr<SafetensorsFile>> parse_image(const std::vector<uint8_t>& img) {
  auto owner = std::make_shared<std::vector<uint8_t>>(img);
  return SafetensorsFile::parse(owner->data(), owner->size(), owner, "t.safetensors");
}

Status parse_status(const std::string& header, size_t data_bytes) {
  return parse_image(test::st_raw(header, std::vector<uint8_t>(data_bytes, 0))).status();
}

}  // namespace

TEST_CASE("safetensors: a well-formed file") {
  const std::vector<float> a = {1.0f, -2.0f, 3.5f, 0.25f, 8.0f, -0.5f};
  const std::vector<uint16_t> b = {0x3c00, 0xc000, 0x7bff};  // f16 1, -2, 65504
  const auto img = test::st_image({{"a.weight", "F32", {2, 3}, test::f32_bytes(a)},
                                   {"b", "F16", {3}, test::u16_bytes(b)},
                                   {"empty", "BF16", {0, 4}, {}},
                                   {"scalar", "I64", {}, std::vector<uint8_t>(8, 7)}},
                                  R"({"format":"pt","note":"x"})");
  auto f = parse_image(img);
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  const SafetensorsFile& file = **f;
  REQUIRE(file.tensors().size() == 4);
  const StTensor* t = file.find("a.weight");
  REQUIRE(t != nullptr);
  CHECK(t->dtype == StDType::kF32);
  CHECK(t->shape == std::vector<int64_t>{2, 3});
  CHECK(t->elements == 6);
  CHECK(t->nbytes == 24);
  CHECK(std::memcmp(t->data, a.data(), 24) == 0);
  const StTensor* tb = file.find("b");
  REQUIRE(tb != nullptr);
  CHECK(tb->dtype == StDType::kF16);
  CHECK(std::memcmp(tb->data, b.data(), 6) == 0);
  CHECK(tb->file_offset == t->file_offset + 24);  // stored back to back
  const StTensor* e = file.find("empty");
  REQUIRE(e != nullptr);
  CHECK(e->elements == 0);
  CHECK(e->data == nullptr);
  const StTensor* s = file.find("scalar");
  REQUIRE(s != nullptr);
  CHECK(s->shape.empty());
  CHECK(s->elements == 1);
  ir::DType d;
  CHECK_FALSE(st_dtype_to_ir(s->dtype, &d));
  CHECK(st_dtype_to_ir(StDType::kBF16, &d));
  CHECK(d == ir::DType::kBF16);
  CHECK(file.find("missing") == nullptr);
  REQUIRE(file.metadata().size() == 2);
  CHECK(file.metadata()[0] == std::make_pair(std::string("format"), std::string("pt")));
  // Tensors come in file order whatever the header's order.
  CHECK(file.tensors()[0].name == "a.weight");
  CHECK(file.tensors()[3].name == "scalar");
}

TEST_CASE("safetensors: header errors, each with its code") {
  struct Case {
    const char* what;
    std::string header;
    size_t data;
    StatusCode code;
    std::string part;
  };
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const Case cases[] = {
      {"not JSON", "{\"a\":", 0, StatusCode::kFileCorrupt, "safetensors header"},
      {"not an object", "[1,2]", 0, StatusCode::kFileCorrupt, "not an object"},
      {"entry not an object", R"({"a":3})", 0, StatusCode::kFileCorrupt, "'a'"},
      {"missing field", R"({"a":{"dtype":"F32","shape":[2]}})", 8, StatusCode::kFileCorrupt,
       "data_offsets"},
      {"extra field", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8,
       StatusCode::kFileCorrupt, "exactly"},
      {"unknown dtype", R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", 2,
       StatusCode::kFileCorrupt, "unknown dtype"},
      {"dtype not a string", R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileCorrupt, "unknown dtype"},
      {"shape not a list", R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8,
       StatusCode::kFileCorrupt, "shape"},
      {"negative dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileCorrupt, "-2"},
      {"fractional dim", R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileCorrupt, "2.5"},
      {"rank 7", R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4,
       StatusCode::kFileSizeOverflow, "rank 7"},
      {"count overflow",
       R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileSizeOverflow, "overflows"},
      {"byte overflow",
       R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileSizeOverflow, "byte size"},
      {"offsets not two", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8,
       StatusCode::kFileCorrupt, "data_offsets"},
      {"negative offset", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8,
       StatusCode::kFileCorrupt, "data_offsets"},
      {"begin after end", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8,
       StatusCode::kFileOffsetOutOfBounds, "[8, 4)"},
      {"past the data", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
       StatusCode::kFileOffsetOutOfBounds, "outside the 4 data bytes"},
      {"size mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
       StatusCode::kFileSizeMismatch, "needs 12"},
      {"overlap", "{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
       StatusCode::kFileCorrupt, "overlap"},
      {"hole", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
       StatusCode::kFileCorrupt, "before tensor 'a'"},
      {"trailing bytes", "{" + ok_entry + "}", 12, StatusCode::kFileCorrupt, "after the last"},
      {"metadata not an object", "{\"__metadata__\":[1]}", 0, StatusCode::kFileCorrupt,
       "__metadata__"},
      {"metadata value not a string", R"({"__metadata__":{"k":1}})", 0, StatusCode::kFileCorrupt,
       "'k'"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.what));
    CHECK_STATUS(parse_status(c.header, c.data), c.code, c.part);
  }
  // The header size itself.
  CHECK_STATUS(parse_image({1, 2, 3}).status(), StatusCode::kFileTruncated, "3 bytes");
  std::vector<uint8_t> big = test::st_raw("{}", {});
  big[0] = 0xff;  // announces 255 + 2 bytes... of which 2 exist
  CHECK_STATUS(parse_image(big).status(), StatusCode::kFileTruncated, "announces");
  std::vector<uint8_t> huge(16, 0);
  huge[7] = 0x10;  // 2^60 bytes
  CHECK_STATUS(parse_image(huge).status(), StatusCode::kFileCorrupt, "limit");
  // An empty file and an empty header object are fine and mean "no tensors".
  auto empty = parse_image(test::st_raw("{}", {}));
  REQUIRE(empty.is_ok());
  CHECK((*empty)->tensors().empty());
}

TEST_CASE("safetensors: every truncation of a file fails cleanly") {
  const auto img = test::st_image({{"a", "F16", {4}, std::vector<uint8_t>(8, 1)},
                                   {"b", "F32", {2}, std::vector<uint8_t>(8, 2)}});
  for (size_t n = 0; n < img.size(); ++n) {
    const std::vector<uint8_t> cut(img.begin(), img.begin() + static_cast<long>(n));
    CHECK_FALSE(parse_image(cut).is_ok());
  }
  CHECK(parse_image(img).is_ok());
}

TEST_CASE("safetensors: every single-byte change either fails or stays in bounds") {
  const auto img = test::st_image({{"a", "F16", {2, 3}, std::vector<uint8_t>(12, 1)},
                                   {"b", "BF16", {4}, std::vector<uint8_t>(8, 2)}});
  int accepted = 0;
  for (size_t i = 0; i < img.size(); ++i)
    for (const uint8_t x : {0x00, 0x01, 0x22, 0x2d, 0x30, 0x39, 0x5b, 0x7d, 0x80, 0xff}) {
      std::vector<uint8_t> m = img;
      if (m[i] == x) continue;
      m[i] = x;
      auto f = parse_image(m);
      if (!f.is_ok()) continue;
      ++accepted;
      // Accepted (e.g. a changed data byte or tensor name): every view lies inside the image.
      const uint8_t* begin = nullptr;
      for (const StTensor& t : (*f)->tensors()) {
        if (t.nbytes == 0) continue;
        if (begin == nullptr) begin = t.data - t.file_offset;
        CHECK(t.file_offset + t.nbytes <= m.size());
        CHECK(t.data == begin + t.file_offset);
        CHECK(t.nbytes ==
              static_cast<uint64_t>(t.elements) * static_cast<uint64_t>(st_dtype_size(t.dtype)));
      }
    }
  CHECK(accepted > 0);  // the data bytes at least
}

TEST_CASE("safetensors: open maps a file; missing paths and directories are I/O errors") {
  test::TempDir dir;
  const std::vector<float> v = {1, 2, 3, 4};
  test::write_bytes(dir.file("m.safetensors"),
                    test::st_image({{"w", "F32", {2, 2}, test::f32_bytes(v)}}));
  auto f = SafetensorsFile::open(dir.file("m.safetensors"));
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  const StTensor* t = (*f)->find("w");
  REQUIRE(t != nullptr);
  CHECK(std::memcmp(t->data, v.data(), 16) == 0);
  // Released pages are read again from the file when touched.
  (*f)->release(*t);
  CHECK(std::memcmp(t->data, v.data(), 16) == 0);
  CHECK_STATUS(SafetensorsFile::open(dir.file("nope.safetensors")).status(), StatusCode::kIoError,
               "nope.safetensors");
  CHECK_STATUS(SafetensorsFile::open(dir.path).status(), StatusCode::kIoError, "regular file");
  test::write_bytes(dir.file("short.safetensors"), {1, 2});
  CHECK_STATUS(SafetensorsFile::open(dir.file("short.safetensors")).status(),
               StatusCode::kFileTruncated, "short.safetensors");
}

TEST_CASE("safetensors: checkpoints, single and sharded") {
  test::TempDir dir;
  const auto shard1 = test::st_image(
      {{"a", "F32", {1}, test::f32_bytes({1})}, {"b", "F32", {1}, test::f32_bytes({2})}});
  const auto shard2 = test::st_image({{"c", "F32", {1}, test::f32_bytes({3})}});
  test::write_bytes(dir.file("model-00001-of-00002.safetensors"), shard1);
  test::write_bytes(dir.file("model-00002-of-00002.safetensors"), shard2);
  const std::string index = R"({"metadata":{"total_size":12},"weight_map":{
      "a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors",
      "c":"model-00002-of-00002.safetensors"}})";
  test::write_text(dir.file("model.safetensors.index.json"), index);

  auto ck = SafetensorsCheckpoint::open(dir.path);
  REQUIRE_MESSAGE(ck.is_ok(), ck.status().to_string());
  CHECK(ck->files().size() == 2);
  CHECK(ck->source_paths().size() == 3);  // the index and both shards
  std::shared_ptr<SafetensorsFile> where;
  const StTensor* c = ck->find("c", &where);
  REQUIRE(c != nullptr);
  CHECK(where->path() == dir.file("model-00002-of-00002.safetensors"));
  CHECK(ck->all().size() == 3);
  CHECK(ck->find("d") == nullptr);

  // Index errors.
  auto with_index = [&](const std::string& text) {
    test::write_text(dir.file("model.safetensors.index.json"), text);
    return SafetensorsCheckpoint::open(dir.path).status();
  };
  CHECK_STATUS(with_index("{}"), StatusCode::kFileCorrupt, "weight_map");
  CHECK_STATUS(with_index(R"({"weight_map":{"a":3}})"), StatusCode::kFileCorrupt, "'a'");
  CHECK_STATUS(with_index(R"({"weight_map":{"a":"../x.safetensors"}})"), StatusCode::kFileCorrupt,
               "plain file name");
  CHECK_STATUS(with_index(R"({"weight_map":{"a":"missing.safetensors"}})"), StatusCode::kIoError,
               "missing.safetensors");
  CHECK_STATUS(with_index(R"({"weight_map":{"a":"model-00002-of-00002.safetensors",
      "b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})"),
               StatusCode::kFileCorrupt, "does not hold it");
  CHECK_STATUS(with_index(R"({"weight_map":{"a":"model-00001-of-00002.safetensors",
      "c":"model-00002-of-00002.safetensors"}})"),
               StatusCode::kFileCorrupt, "does not list");
  CHECK_STATUS(with_index(R"({"weight_map":{}})"), StatusCode::kFileCorrupt, "no tensor");
  // A tensor stored in two shards.
  test::write_bytes(dir.file("model-00002-of-00002.safetensors"),
                    test::st_image({{"a", "F32", {1}, test::f32_bytes({9})},
                                    {"c", "F32", {1}, test::f32_bytes({3})}}));
  CHECK_STATUS(with_index(index), StatusCode::kFileCorrupt, "stored in");

  // A single file wins only without an index; a directory with neither is an I/O error.
  test::TempDir single;
  test::write_bytes(single.file("model.safetensors"), shard2);
  auto one = SafetensorsCheckpoint::open(single.path);
  REQUIRE(one.is_ok());
  CHECK(one->find("c") != nullptr);
  test::TempDir none;
  CHECK_STATUS(SafetensorsCheckpoint::open(none.path).status(), StatusCode::kIoError, "neither");
}

TEST_CASE("safetensors: from_index opens each shard once, through the caller's opener") {
  // The same checks as open() on a directory, over images in memory (what fuzz_safetensors does).
  const auto shard1 = test::st_image(
      {{"a", "F32", {1}, test::f32_bytes({1})}, {"b", "F32", {1}, test::f32_bytes({2})}});
  const auto shard2 = test::st_image({{"c", "F32", {1}, test::f32_bytes({3})}});
  std::vector<std::string> asked;
  auto opener = [&](const std::string& shard) -> Result<std::shared_ptr<SafetensorsFile>> {
    asked.push_back(shard);
    if (shard == "one.safetensors") return parse_image(shard1);
    if (shard == "two.safetensors") return parse_image(shard2);
    return Status(StatusCode::kIoError, "no shard '" + shard + "'");
  };
  auto ck = SafetensorsCheckpoint::from_index(
      R"({"weight_map":{"a":"one.safetensors","c":"two.safetensors","b":"one.safetensors"}})",
      "idx.json", opener);
  REQUIRE_MESSAGE(ck.is_ok(), ck.status().to_string());
  CHECK(asked == std::vector<std::string>{"one.safetensors", "two.safetensors"});
  CHECK(ck->source_paths() ==
        std::vector<std::string>{"idx.json", "t.safetensors", "t.safetensors"});
  CHECK(ck->all().size() == 3);
  CHECK_STATUS(SafetensorsCheckpoint::from_index(R"({"weight_map":{"a":"three.safetensors"}})",
                                                 "idx.json", opener)
                   .status(),
               StatusCode::kIoError, "three.safetensors");
  CHECK_STATUS(SafetensorsCheckpoint::from_index("{", "idx.json", opener).status(),
               StatusCode::kFileCorrupt, "idx.json");
}
