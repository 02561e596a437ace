// The GGUF reader (frontends/gguf.h): synthetic files written by a small writer below (every
// metadata type, v2 and v3, malformed files), the real SmolLM2 GGUF (its metadata, tensors and
// the Q/K row permutation against transformers' reading of the same file), and the RoPE claim.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"
#include "tests/frontends/gguf_writer.h"
#include "tests/test_files.h"

using namespace laya;
using namespace laya::frontends::gguf;

namespace {

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

using test::Bytes;
using test::TensorSpec;
using test::Writer;

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A file with every metadata type and a few tensors.
Writer full_writer(uint32_t version) {
  Writer w;
  w.version = version;
  w.kv("t.u8", 0, [](Bytes& o) { o.put<uint8_t>(200); });
  w.kv("t.i8", 1, [](Bytes& o) { o.put<int8_t>(-100); });
  w.kv("t.u16", 2, [](Bytes& o) { o.put<uint16_t>(60000); });
  w.kv("t.i16", 3, [](Bytes& o) { o.put<int16_t>(-30000); });
  w.u32("t.u32", 4000000000u);
  w.i32("t.i32", -2000000000);
  w.f32("t.f32", 1.5f);
  w.boolean("t.bool", true);
  w.string("t.string", "h\xc3\xa9llo");
  w.kv("t.u64", 10, [](Bytes& o) { o.put<uint64_t>((uint64_t{1} << 63) + 5); });
  w.kv("t.i64", 11, [](Bytes& o) { o.put<int64_t>(-(int64_t{1} << 62)); });
  w.kv("t.f64", 12, [](Bytes& o) { o.put<double>(0.1); });
  w.array<uint8_t>("a.u8", 0, {1, 2, 255});
  w.array<int8_t>("a.i8", 1, {-1, 2});
  w.array<uint16_t>("a.u16", 2, {65535});
  w.array<int16_t>("a.i16", 3, {-32768, 7});
  w.array<uint32_t>("a.u32", 4, {1, 4000000000u});
  w.array<int32_t>("a.i32", 5, {-5, 6, 7});
  w.array<float>("a.f32", 6, {0.25f, -2.0f});
  w.array<uint8_t>("a.bool", 7, {1, 0, 1});
  w.strings("a.string", {"a", "", "b c"});
  w.array<uint64_t>("a.u64", 10, {uint64_t{1} << 40});
  w.array<int64_t>("a.i64", 11, {-3});
  w.array<double>("a.f64", 12, {2.5});
  w.array<int32_t>("a.empty", 5, {});
  // An array of arrays: [[1, 2], [3]] of i32, and [["x"], []] of strings.
  w.kv("a.nested", 9, [](Bytes& o) {
    o.put<uint32_t>(9).put<uint64_t>(2);
    o.put<uint32_t>(5).put<uint64_t>(2).put<int32_t>(1).put<int32_t>(2);
    o.put<uint32_t>(5).put<uint64_t>(1).put<int32_t>(3);
  });
  w.kv("a.nested_str", 9, [](Bytes& o) {
    o.put<uint32_t>(9).put<uint64_t>(2);
    o.put<uint32_t>(8).put<uint64_t>(1).str("x");
    o.put<uint32_t>(8).put<uint64_t>(0);
  });
  w.tensor("w.f32", {3, 2}, 0, f32_bytes({1, 2, 3, 4, 5, 6}));
  std::vector<uint8_t> q8(2 * sizeof(kernels::BlockQ8_0));
  std::vector<float> src(64);
  for (int i = 0; i < 64; ++i) src[i] = static_cast<float>(i) - 30.0f;
  kernels::quantize_row_q8_0(src.data(), reinterpret_cast<kernels::BlockQ8_0*>(q8.data()), 64);
  w.tensor("w.q8_0", {32, 2}, 8, q8);
  w.tensor("w.i32", {5}, 26, std::vector<uint8_t>(20, 1));
  return w;
}

Result<File> parse(const std::vector<uint8_t>& b) {
  return File::parse(b.data(), b.size());
}

}  // namespace

TEST_CASE("gguf: every metadata type reads back, v2 and v3") {
  for (uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    const std::vector<uint8_t> bytes = full_writer(version).bytes();
    Result<File> r = parse(bytes);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    const File& f = *r;
    CHECK(f.version() == version);
    CHECK(f.alignment() == 32);
    CHECK(f.data_offset() % 32 == 0);
    CHECK(f.metadata().size() == 27);
    CHECK(*f.get_int("t.u8") == 200);
    CHECK(*f.get_int("t.i8") == -100);
    CHECK(*f.get_int("t.u16") == 60000);
    CHECK(*f.get_int("t.i16") == -30000);
    CHECK(*f.get_int("t.u32") == 4000000000ll);
    CHECK(*f.get_int("t.i32") == -2000000000);
    CHECK(*f.get_float("t.f32") == 1.5);
    CHECK(*f.get_bool("t.bool"));
    CHECK(*f.get_string("t.string") == "h\xc3\xa9llo");
    CHECK(f.get_int("t.u64").status().code() == StatusCode::kOutOfRange);
    CHECK(f.find("t.u64")->bits == (uint64_t{1} << 63) + 5);
    CHECK(*f.get_int("t.i64") == -(int64_t{1} << 62));
    CHECK(*f.get_float("t.f64") == 0.1);
    CHECK(*f.get_float("t.u32") == 4e9);  // integers convert to float
    const Value* a = f.find("a.u8");
    REQUIRE(a != nullptr);
    CHECK(a->type == ValueType::kArray);
    CHECK(a->elem_type == ValueType::kU8);
    CHECK(a->count == 3);
    CHECK(a->int_at(2) == 255);
    CHECK(f.find("a.i8")->int_at(0) == -1);
    CHECK(f.find("a.u16")->int_at(0) == 65535);
    CHECK(f.find("a.i16")->int_at(0) == -32768);
    CHECK(f.find("a.u32")->int_at(1) == 4000000000ll);
    CHECK(f.find("a.i32")->int_at(2) == 7);
    CHECK(f.find("a.f32")->float_at(1) == -2.0);
    CHECK(f.find("a.bool")->int_at(0) == 0);  // bool elements are not integers...
    CHECK(f.find("a.bool")->elems[2] == 1);   // ...but their bytes are there
    CHECK(f.find("a.u64")->int_at(0) == int64_t{1} << 40);
    CHECK(f.find("a.i64")->int_at(0) == -3);
    CHECK(f.find("a.f64")->float_at(0) == 2.5);
    CHECK(f.find("a.empty")->count == 0);
    Result<std::vector<std::string_view>> s = f.get_strings("a.string");
    REQUIRE(s.is_ok());
    CHECK(s->size() == 3);
    CHECK((*s)[0] == "a");
    CHECK((*s)[1].empty());
    CHECK((*s)[2] == "b c");
    const Value* n = f.find("a.nested");
    REQUIRE(n != nullptr);
    REQUIRE(n->arrays.size() == 2);
    CHECK(n->arrays[0].count == 2);
    CHECK(n->arrays[0].int_at(1) == 2);
    CHECK(n->arrays[1].int_at(0) == 3);
    const Value* ns = f.find("a.nested_str");
    REQUIRE(ns->arrays.size() == 2);
    CHECK(ns->arrays[0].strings.at(0) == "x");
    CHECK(ns->arrays[1].strings.empty());

    REQUIRE(f.tensors().size() == 3);
    const TensorInfo* t = f.tensor("w.f32");
    REQUIRE(t != nullptr);
    CHECK(t->dtype == ir::DType::kF32);
    CHECK(t->n_dims == 2);
    CHECK(t->ne[0] == 3);
    CHECK(t->ne[1] == 2);
    CHECK(t->shape[0] == 2);  // row-major: 2 rows of 3
    CHECK(t->shape[1] == 3);
    CHECK(t->bytes == 24);
    CHECK(t->data == bytes.data() + f.data_offset() + t->offset);  // a view, not a copy
    float v[6];
    std::memcpy(v, t->data, 24);
    CHECK(v[5] == 6.0f);
    const TensorInfo* q = f.tensor("w.q8_0");
    REQUIRE(q != nullptr);
    CHECK(q->dtype == ir::DType::kQ8_0);
    CHECK(q->offset % 32 == 0);
    CHECK(q->bytes == 68);
    std::vector<float> deq(64);
    kernels::dequantize_row_q8_0(reinterpret_cast<const kernels::BlockQ8_0*>(q->data), deq.data(),
                                 64);
    CHECK(std::fabs(deq[63] - 33.0f) < 0.2f);
    CHECK(f.tensor("w.i32")->dtype == ir::DType::kI32);
    CHECK(f.tensor("nope") == nullptr);
  }
}

TEST_CASE("gguf: typed accessors name the key on a miss or a wrong type") {
  const std::vector<uint8_t> bytes = full_writer(3).bytes();
  Result<File> r = parse(bytes);
  REQUIRE(r.is_ok());
  Status st = r->get_int("no.such.key").status();
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK(contains(st.message(), "no.such.key"));
  st = r->get_int("t.string").status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "t.string"));
  CHECK(r->get_string("t.u8").status().code() == StatusCode::kInvalidArgument);
  CHECK(r->get_bool("t.u8").status().code() == StatusCode::kInvalidArgument);
  CHECK(r->get_float("t.string").status().code() == StatusCode::kInvalidArgument);
  CHECK(r->get_strings("a.i32").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("gguf: general.alignment moves the data section and the offsets") {
  Writer w;
  w.alignment = 256;
  w.u32("general.alignment", 256);
  w.tensor("a", {4}, 0, f32_bytes({1, 2, 3, 4}));
  w.tensor("b", {4}, 0, f32_bytes({5, 6, 7, 8}));
  const std::vector<uint8_t> bytes = w.bytes();
  Result<File> r = parse(bytes);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  CHECK(r->alignment() == 256);
  CHECK(r->data_offset() == 256);
  CHECK(r->tensor("b")->offset == 256);
  float v;
  std::memcpy(&v, r->tensor("b")->data, 4);
  CHECK(v == 5.0f);
  // The same tensors with the default alignment but offsets of 256 still parse (256 % 32 == 0);
  // alignment 256 with offset 32 does not.
  Writer bad = w;
  bad.tensors[1].offset = 32;
  CHECK(parse(bad.bytes()).status().code() == StatusCode::kFileMisaligned);
}

TEST_CASE(
    "gguf: every supported tensor type maps to its dtype, others fail naming tensor and type") {
  struct Case {
    uint32_t type;
    ir::DType dtype;
    uint64_t row;  // elements in a row (a multiple of the block)
  };
  const Case ok[] = {
      {0, ir::DType::kF32, 4},     {1, ir::DType::kF16, 4},     {30, ir::DType::kBF16, 4},
      {8, ir::DType::kQ8_0, 32},   {2, ir::DType::kQ4_0, 32},   {3, ir::DType::kQ4_1, 32},
      {12, ir::DType::kQ4_K, 256}, {13, ir::DType::kQ5_K, 256}, {14, ir::DType::kQ6_K, 256},
      {24, ir::DType::kI8, 4},     {26, ir::DType::kI32, 4},    {6, ir::DType::kQ5_0, 32},
      {7, ir::DType::kQ5_1, 32}};
  for (const Case& c : ok) {
    CAPTURE(c.type);
    Writer w;
    const uint64_t bytes = *ir::dtype_bytes(c.dtype, static_cast<int64_t>(2 * c.row));
    w.tensor("t", {c.row, 2}, c.type, std::vector<uint8_t>(bytes, 0));
    const std::vector<uint8_t> b = w.bytes();
    Result<File> r = parse(b);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    CHECK(r->tensor("t")->dtype == c.dtype);
    CHECK(r->tensor("t")->bytes == bytes);
  }
  struct Bad {
    uint32_t type;
    const char* name;
  };
  for (const Bad& b :
       {Bad{20, "iq4_nl"}, Bad{9, "q8_1"}, Bad{10, "q2_K"}, Bad{11, "q3_K"}, Bad{15, "q8_K"},
        Bad{16, "iq2_xxs"}, Bad{23, "iq4_xs"}, Bad{25, "i16"}, Bad{28, "f64"}, Bad{39, "mxfp4"},
        Bad{4, "type 4"}, Bad{1000, "type 1000"}}) {
    Writer w;
    w.tensor("blk.3.ffn_up.weight", {256, 2}, b.type, std::vector<uint8_t>(4096, 0));
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kUnsupported);
    CHECK_MESSAGE(contains(st.message(), "blk.3.ffn_up.weight"), st.message());
    CHECK_MESSAGE(contains(st.message(), b.name), st.message());
  }
}

TEST_CASE("gguf: truncation at every byte is an error, never a crash") {
  const std::vector<uint8_t> full = full_writer(3).bytes();
  REQUIRE(parse(full).is_ok());
  for (size_t n = 0; n < full.size(); ++n) {
    // A fresh heap copy of exactly n bytes, so reading past it is caught by ASan.
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    cut.shrink_to_fit();
    Result<File> r = File::parse(cut.data(), cut.size());
    REQUIRE_MESSAGE(!r.is_ok(), "a prefix of ", n, " bytes parsed");
    const StatusCode c = r.status().code();
    CHECK_MESSAGE((c == StatusCode::kFileTruncated || c == StatusCode::kFileEmpty ||
                   c == StatusCode::kFileBadIdentifier || c == StatusCode::kFileOffsetOutOfBounds),
                  n, ": ", r.status().to_string());
  }
}

TEST_CASE("gguf: huge counts and lengths fail fast without allocating") {
  auto code_of = [](const Writer& w) { return parse(w.bytes()).status(); };
  {  // an array of 10^12 i32
    Writer w;
    w.kv("big", 9, [](Bytes& o) { o.put<uint32_t>(5).put<uint64_t>(1000000000000ull); });
    const Status st = code_of(w);
    CHECK(st.code() == StatusCode::kFileTruncated);
    CHECK(contains(st.message(), "big"));
  }
  {  // 10^12 strings, and 10^12 nested arrays
    Writer w;
    w.kv("s", 9, [](Bytes& o) { o.put<uint32_t>(8).put<uint64_t>(1000000000000ull); });
    CHECK(code_of(w).code() == StatusCode::kFileTruncated);
    Writer w2;
    w2.kv("n", 9, [](Bytes& o) { o.put<uint32_t>(9).put<uint64_t>(1000000000000ull); });
    CHECK(code_of(w2).code() == StatusCode::kFileTruncated);
  }
  {  // a string of 2^62 bytes
    Writer w;
    w.kv("s", 8, [](Bytes& o) { o.put<uint64_t>(uint64_t{1} << 62); });
    CHECK(code_of(w).code() == StatusCode::kFileCorrupt);
    Writer w2;
    w2.kv("s", 8, [](Bytes& o) { o.put<uint64_t>(1000); });  // within the limit, past the end
    CHECK(code_of(w2).code() == StatusCode::kFileTruncated);
  }
  {  // header counts
    Writer w = full_writer(3);
    w.kv_count_override = 1000000000000ll;
    CHECK(code_of(w).code() == StatusCode::kFileCorrupt);  // over kMaxKeys
    Writer w2 = full_writer(3);
    w2.tensor_count_override = 1000000000000ll;
    CHECK(code_of(w2).code() == StatusCode::kFileCorrupt);
    Writer w2b = full_writer(3);
    w2b.kv_count_override = 100000;  // within the limit, more than the file can hold
    CHECK(code_of(w2b).code() == StatusCode::kFileTruncated);
    Writer w3 = full_writer(3);
    w3.tensor_count_override = 4;  // one more than written: runs into the data
    CHECK(!parse(w3.bytes()).is_ok());
  }
  {  // dimensions: too many, overflowing product, size overflow
    Writer w;
    w.tensor("t", {1, 1, 1, 1, 1}, 0, {});
    CHECK(code_of(w).code() == StatusCode::kFileCorrupt);
    Writer w2;
    w2.tensor("t", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, {});
    CHECK(code_of(w2).code() == StatusCode::kFileSizeOverflow);
    Writer w3;
    w3.tensor("t", {uint64_t{1} << 62, 1}, 0, {});  // 2^62 f32: bytes overflow int64
    CHECK(code_of(w3).code() == StatusCode::kFileSizeOverflow);
    Writer w4;
    w4.tensor("t", {1000000, 1000}, 0, {});  // 4 GB of f32 in a tiny file
    const Status st = code_of(w4);
    CHECK(st.code() == StatusCode::kFileOffsetOutOfBounds);
    CHECK(contains(st.message(), "'t'"));
  }
  {  // arrays nested 9 deep
    Writer w;
    w.kv("deep", 9, [](Bytes& o) {
      for (int i = 0; i < 9; ++i) o.put<uint32_t>(9).put<uint64_t>(1);
      o.put<uint32_t>(5).put<uint64_t>(0);
    });
    const Status st = code_of(w);
    CHECK(st.code() == StatusCode::kFileCorrupt);
    CHECK(contains(st.message(), "nested"));
  }
}

TEST_CASE("gguf: random corruption of a valid file is an error or a valid parse, never a crash") {
  // A deterministic stand-in for the libFuzzer target (tests/fuzz, once that infrastructure is on
  // main): flip bytes of the header, metadata and tensor table of a file with every value type;
  // each result must be a Status or a File whose tensor views lie inside the input (ASan + UBSan
  // run this in CI).
  const std::vector<uint8_t> base = full_writer(3).bytes();
  Result<File> ok = parse(base);
  REQUIRE(ok.is_ok());
  const size_t meta_end = static_cast<size_t>(ok->data_offset());
  std::mt19937 rng(2024);
  std::uniform_int_distribution<size_t> pos(0, meta_end - 1);
  std::uniform_int_distribution<int> byte(0, 255), count(1, 4);
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = base;
    for (int i = count(rng); i > 0; --i) b[pos(rng)] = static_cast<uint8_t>(byte(rng));
    Result<File> r = File::parse(b.data(), b.size());
    if (!r.is_ok()) {
      CHECK(std::strlen(r.status().message()) > 0);
      continue;
    }
    ++parsed;
    for (const TensorInfo& t : r->tensors()) {
      REQUIRE(t.data >= b.data());
      REQUIRE(t.data + t.bytes <= b.data() + b.size());
    }
  }
  MESSAGE(parsed, " of 3000 corrupted files still parsed");
}

TEST_CASE("gguf: misaligned, overlapping and out-of-bounds tensors") {
  {
    Writer w;
    w.tensor("a", {4}, 0, f32_bytes({1, 2, 3, 4}), 8);
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileMisaligned);
    CHECK(contains(st.message(), "'a'"));
  }
  {
    Writer w;
    w.tensor("a", {16}, 0, std::vector<uint8_t>(64, 0), 0);
    w.tensor("b", {16}, 0, std::vector<uint8_t>(64, 0), 32);
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileCorrupt);
    CHECK(contains(st.message(), "overlap"));
  }
  {
    Writer w;
    w.tensor("a", {16}, 0, std::vector<uint8_t>(64, 0));
    std::vector<uint8_t> b = w.bytes();
    b.resize(b.size() - 1);  // the last byte of the data is missing
    CHECK(parse(b).status().code() == StatusCode::kFileOffsetOutOfBounds);
  }
  {  // a q4_K row of 100 elements is not whole super-blocks
    Writer w;
    w.tensor("k", {100, 1}, 12, std::vector<uint8_t>(144, 0));
    CHECK(parse(w.bytes()).status().code() == StatusCode::kFileCorrupt);
  }
}

TEST_CASE("gguf: malformed headers and metadata") {
  CHECK(File::parse(nullptr, 0).status().code() == StatusCode::kFileEmpty);
  std::vector<uint8_t> b = full_writer(3).bytes();
  b[0] = 'X';
  CHECK(parse(b).status().code() == StatusCode::kFileBadIdentifier);
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {  // 0x03000000: a big-endian v3 file
    Writer w = full_writer(3);
    w.version = v;
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileUnsupportedVersion);
  }
  {
    Writer w;
    w.u32("k", 1).u32("k", 2);
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileCorrupt);
    CHECK(contains(st.message(), "duplicate key 'k'"));
  }
  {
    Writer w;
    w.tensor("t", {4}, 0, f32_bytes({1, 2, 3, 4}));
    w.tensor("t", {4}, 0, f32_bytes({1, 2, 3, 4}));
    CHECK(contains(parse(w.bytes()).status().message(), "duplicate tensor 't'"));
  }
  {
    Writer w;
    w.kv("weird", 13, [](Bytes& o) { o.put<uint32_t>(0); });
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileCorrupt);
    CHECK(contains(st.message(), "weird"));
    Writer w2;
    w2.kv("arr", 9, [](Bytes& o) { o.put<uint32_t>(77).put<uint64_t>(0); });
    CHECK(contains(parse(w2.bytes()).status().message(), "element type 77"));
    Writer w3;
    w3.kv("b", 7, [](Bytes& o) { o.put<uint8_t>(2); });
    CHECK(parse(w3.bytes()).status().code() == StatusCode::kFileCorrupt);
  }
  for (uint32_t a : {0u, 3u, 48u}) {
    Writer w;
    w.u32("general.alignment", a);
    const Status st = parse(w.bytes()).status();
    CHECK(st.code() == StatusCode::kFileCorrupt);
    CHECK(contains(st.message(), "power of two"));
  }
  {
    Writer w;
    w.f32("general.alignment", 32.0f);
    CHECK(contains(parse(w.bytes()).status().message(), "not u32"));
  }
  {  // a file with no tensors and no keys is valid
    Writer w;
    Result<File> r = parse(w.bytes());
    REQUIRE(r.is_ok());
    CHECK(r->tensors().empty());
  }
}

TEST_CASE("gguf: open() maps a file; missing files are i/o errors") {
  CHECK(File::open("/nonexistent/x.gguf").status().code() == StatusCode::kIoError);
  const std::vector<uint8_t> bytes = full_writer(2).bytes();
  char path[] = "/tmp/laya_gguf_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
  {
    Result<File> r = File::open(path);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    File moved = std::move(*r);  // the mapping moves with the File
    CHECK(moved.file_size() == bytes.size());
    float v;
    std::memcpy(&v, moved.tensor("w.f32")->data, 4);
    CHECK(v == 1.0f);
  }
  const int fd2 = open(path, O_WRONLY | O_TRUNC);
  close(fd2);
  CHECK(File::open(path).status().code() == StatusCode::kFileEmpty);
  std::remove(path);
}

// ---- decoder metadata (synthetic) ---------------------------------------------------------------

namespace {

Writer llama_writer(uint32_t kv_heads = 2, uint32_t pad_id = 0) {
  Writer w;
  w.string("general.architecture", "llama");
  w.u32("llama.context_length", 2048);
  w.u32("llama.embedding_length", 64);
  w.u32("llama.block_count", 1);
  w.u32("llama.feed_forward_length", 96);
  w.u32("llama.attention.head_count", 4);
  w.u32("llama.attention.head_count_kv", kv_heads);
  w.f32("llama.rope.freq_base", 500000.0f);
  w.f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w.string("tokenizer.ggml.model", "gpt2");
  w.string("tokenizer.ggml.pre", "llama-bpe");
  w.strings("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>"});
  w.strings("tokenizer.ggml.merges", {"a b"});
  w.array<int32_t>("tokenizer.ggml.token_type", 5, {1, 1, 1, 3});
  w.array<float>("tokenizer.ggml.scores", 6, {0, -1, -2, 0});
  w.u32("tokenizer.ggml.bos_token_id", 3);
  w.u32("tokenizer.ggml.eos_token_id", 3);
  if (pad_id != 0) w.u32("tokenizer.ggml.padding_token_id", pad_id);
  w.boolean("tokenizer.ggml.add_bos_token", true);
  w.string("tokenizer.chat_template", "{{ x }}");
  return w;
}

void add_llama_tensors(Writer& w, bool drop_one = false) {
  const uint64_t d = 64, dkv = 32, ff = 96, vocab = 4;
  auto f32s = [](uint64_t n) { return std::vector<uint8_t>(4 * n, 0); };
  w.tensor("token_embd.weight", {d, vocab}, 0, f32s(d * vocab));
  w.tensor("output_norm.weight", {d}, 0, f32s(d));
  w.tensor("blk.0.attn_norm.weight", {d}, 0, f32s(d));
  w.tensor("blk.0.attn_q.weight", {d, d}, 0, f32s(d * d));
  w.tensor("blk.0.attn_k.weight", {d, dkv}, 0, f32s(d * dkv));
  w.tensor("blk.0.attn_v.weight", {d, dkv}, 0, f32s(d * dkv));
  w.tensor("blk.0.attn_output.weight", {d, d}, 0, f32s(d * d));
  w.tensor("blk.0.ffn_norm.weight", {d}, 0, f32s(d));
  w.tensor("blk.0.ffn_gate.weight", {d, ff}, 0, f32s(d * ff));
  w.tensor("blk.0.ffn_up.weight", {d, ff}, 0, f32s(d * ff));
  if (!drop_one) w.tensor("blk.0.ffn_down.weight", {ff, d}, 0, f32s(d * ff));
}

}  // namespace

TEST_CASE("gguf: decoder params, tokenizer data and tensor checks (synthetic llama)") {
  Writer w = llama_writer();
  add_llama_tensors(w);
  const std::vector<uint8_t> bytes = w.bytes();
  Result<File> f = parse(bytes);
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  Result<DecoderParams> p = decoder_params(*f);
  REQUIRE_MESSAGE(p.is_ok(), p.status().to_string());
  CHECK(p->arch == "llama");
  CHECK(p->context_length == 2048);
  CHECK(p->embedding_length == 64);
  CHECK(p->block_count == 1);
  CHECK(p->feed_forward_length == 96);
  CHECK(p->head_count == 4);
  CHECK(p->head_count_kv == 2);
  CHECK(p->rope_dimension_count == 16);  // default d / heads
  CHECK(p->rope_freq_base == 500000.0);
  CHECK(p->rms_norm_eps == doctest::Approx(1e-6).epsilon(1e-6));
  CHECK(p->vocab_size == 4);  // from the token list
  CHECK(check_decoder_tensors(*f, *p).is_ok());
  Result<TokenizerData> t = tokenizer_data(*f);
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  CHECK(t->model == "gpt2");
  CHECK(t->pre == "llama-bpe");
  CHECK(t->tokens.size() == 4);
  CHECK(t->tokens[2] == "ab");
  CHECK(t->merges.at(0) == "a b");
  CHECK(t->token_type.at(3) == 3);
  CHECK(t->scores.at(2) == -2.0f);
  CHECK(t->bos_id == 3);
  CHECK(t->eos_id == 3);
  CHECK(t->pad_id == -1);
  CHECK(t->unk_id == -1);
  CHECK(t->add_bos == 1);
  CHECK(t->add_eos == -1);
  CHECK(t->chat_template == "{{ x }}");

  Writer missing = llama_writer();
  add_llama_tensors(missing, /*drop_one=*/true);
  const std::vector<uint8_t> mb = missing.bytes();
  Result<File> mf = parse(mb);
  REQUIRE(mf.is_ok());
  const Status st = check_decoder_tensors(*mf, *decoder_params(*mf));
  CHECK(st.code() == StatusCode::kNotFound);
  CHECK(contains(st.message(), "blk.0.ffn_down.weight"));

  const std::vector<uint8_t> bb = llama_writer(2, /*pad_id=*/4).bytes();  // == vocab size
  Result<File> fb = parse(bb);
  REQUIRE(fb.is_ok());
  CHECK(contains(tokenizer_data(*fb).status().message(), "padding_token_id"));
  const std::vector<uint8_t> bb2 = llama_writer(/*kv_heads=*/3).bytes();  // does not divide 4
  Result<File> fb2 = parse(bb2);
  REQUIRE(fb2.is_ok());
  CHECK(decoder_params(*fb2).status().code() == StatusCode::kFileCorrupt);
  Writer bad3;
  bad3.string("general.architecture", "llama");
  const std::vector<uint8_t> bb3 = bad3.bytes();
  Result<File> fb3 = parse(bb3);
  REQUIRE(fb3.is_ok());
  CHECK(contains(decoder_params(*fb3).status().message(), "llama.context_length"));
}

// ---- RoPE modes ----------------------------------------------------------------------------------

TEST_CASE("gguf: RoPE on permuted (GGUF llama) rows with kGptj equals kNeox on HF rows") {
  // The claim of frontends/gguf.h: for a llama GGUF, q rows come permuted (row 2i + s of a head =
  // HF row s*hd/2 + i) and llama.cpp rotates adjacent pairs. Rotating a permuted q by adjacent
  // pairs must give the permutation of HF's rotate_half result, for every position.
  CHECK(*rope_mode_for_arch("llama") == ir::RopeMode::kGptj);
  CHECK(*rope_mode_for_arch("qwen2") == ir::RopeMode::kNeox);
  CHECK(rope_mode_for_arch("gemma").status().code() == StatusCode::kUnsupported);
  CHECK(arch_permutes_qk("llama"));
  CHECK(!arch_permutes_qk("qwen2"));
  const int32_t heads = 3, hd = 64;
  const int64_t tokens = 4;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> hf(tokens * heads * hd), gg(hf.size());
  for (float& v : hf) v = dist(rng);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < heads * hd; ++r)
      gg[t * heads * hd + r] = hf[t * heads * hd + hf_row_of_gguf_row(r, hd)];
  const int32_t pos[tokens] = {0, 1, 17, 4000};
  std::vector<float> y_hf(hf.size()), y_gg(gg.size());
  kernels::ref::rope(hf.data(), y_hf.data(), pos, tokens, heads, hd, hd, 100000.0f,
                     ir::RopeMode::kNeox, nullptr);
  kernels::ref::rope(gg.data(), y_gg.data(), pos, tokens, heads, hd, hd, 100000.0f,
                     ir::RopeMode::kGptj, nullptr);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t r = 0; r < heads * hd; ++r)
      REQUIRE(y_gg[t * heads * hd + r] == y_hf[t * heads * hd + hf_row_of_gguf_row(r, hd)]);
  // And the wrong pairing (kNeox on GGUF rows) differs: the test can fail.
  std::vector<float> y_wrong(gg.size());
  kernels::ref::rope(gg.data(), y_wrong.data(), pos, tokens, heads, hd, hd, 100000.0f,
                     ir::RopeMode::kNeox, nullptr);
  int differ = 0;
  for (int64_t r = 0; r < heads * hd; ++r)
    differ += y_wrong[heads * hd + r] != y_hf[heads * hd + hf_row_of_gguf_row(r, hd)];
  CHECK(differ > heads * hd / 2);
}

// ---- the real SmolLM2 GGUF ----------------------------------------------------------------------

namespace {

// Dequantized row `row` of a 2-D tensor (kernels' reference dequantizers).
std::vector<float> row_of(const TensorInfo& t, int64_t row) {
  std::vector<float> out(static_cast<size_t>(t.shape[1]));
  kernels::WType w = kernels::WType::kF32;
  switch (t.dtype) {
    case ir::DType::kF32:
      w = kernels::WType::kF32;
      break;
    case ir::DType::kF16:
      w = kernels::WType::kF16;
      break;
    case ir::DType::kQ8_0:
      w = kernels::WType::kQ8_0;
      break;
    case ir::DType::kQ4_0:
      w = kernels::WType::kQ4_0;
      break;
    case ir::DType::kQ4_1:
      w = kernels::WType::kQ4_1;
      break;
    default:
      FAIL("unexpected dtype ", ir::dtype_name(t.dtype));
  }
  kernels::ref::dequantize_row(w, t.data, nullptr, row, t.shape[1], out.data());
  return out;
}

}  // namespace

TEST_CASE("gguf: the real SmolLM2-135M-Instruct Q4_1 file") {
  const std::string path = test::smollm2_or_skip();
  if (path.empty()) return;
  Result<File> r = File::open(path);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  const File& f = *r;
  CHECK(f.version() == 3);
  CHECK(f.tensors().size() == 272);
  CHECK(f.metadata().size() == 33);
  Result<DecoderParams> p = decoder_params(f);
  REQUIRE_MESSAGE(p.is_ok(), p.status().to_string());
  CHECK(p->arch == "llama");
  CHECK(p->context_length == 8192);
  CHECK(p->embedding_length == 576);
  CHECK(p->block_count == 30);
  CHECK(p->feed_forward_length == 1536);
  CHECK(p->head_count == 9);
  CHECK(p->head_count_kv == 3);
  CHECK(p->rope_dimension_count == 64);
  CHECK(p->rope_freq_base == 100000.0);
  CHECK(static_cast<float>(p->rms_norm_eps) == 1e-5f);
  CHECK(p->vocab_size == 49152);
  const Status tensors_ok = check_decoder_tensors(f, *p);
  CHECK_MESSAGE(tensors_ok.is_ok(), tensors_ok.to_string());
  CHECK(f.tensor("output.weight") == nullptr);  // tied to token_embd

  Result<TokenizerData> t = tokenizer_data(f);
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  CHECK(t->model == "gpt2");
  CHECK(t->pre == "smollm");
  CHECK(t->tokens.size() == 49152);
  CHECK(t->merges.size() == 48900);
  CHECK(t->token_type.size() == 49152);
  CHECK(t->scores.empty());
  CHECK(t->tokens[1] == "<|im_start|>");
  CHECK(t->tokens[2] == "<|im_end|>");
  CHECK(t->bos_id == 1);
  CHECK(t->eos_id == 2);
  CHECK(t->pad_id == 2);
  CHECK(t->unk_id == 0);
  CHECK(t->add_bos == 0);
  CHECK(t->add_eos == -1);
  CHECK(t->chat_template.substr(0, 28) == "{% for message in messages %");

  const TensorInfo* emb = f.tensor("token_embd.weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->dtype == ir::DType::kQ8_0);
  CHECK(emb->shape[0] == 49152);
  CHECK(emb->shape[1] == 576);
  const TensorInfo* q = f.tensor("blk.0.attn_q.weight");
  REQUIRE(q != nullptr);
  CHECK(q->dtype == ir::DType::kQ4_1);
  CHECK(q->shape[0] == 576);
  CHECK(f.tensor("blk.29.ffn_down.weight")->shape[1] == 1536);
  for (const TensorInfo& ti : f.tensors()) {
    CHECK(ti.offset % f.alignment() == 0);
    CHECK(ti.data + ti.bytes <= emb->data - emb->offset + (f.file_size() - f.data_offset()));
  }

  // Tensors are usable as stored: the Highway matmul packs attn_q (q4_1) and ffn_down straight
  // from the mapping, and its product matches an f64 product of the dequantized rows.
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.ffn_down.weight"}) {
    const TensorInfo& w = *f.tensor(name);
    const kernels::KernelTable table = kernels::kernel_table_hwy();
    const kernels::MatmulKernel& mm = table.matmul[static_cast<int>(kernels::WType::kQ4_1)];
    const int64_t n = w.shape[0], k = w.shape[1], m = 3;
    REQUIRE(mm.packed_bytes(n, k) > 0);
    std::vector<uint8_t> packed(mm.packed_bytes(n, k) + 64),
        scratch(mm.scratch_bytes(m, n, k, 1) + 64);
    uint8_t* pk = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
    uint8_t* sc = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    mm.pack(w.data, nullptr, n, k, pk);
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(m * k), y(m * n);
    for (float& v : x) v = dist(rng);
    mm.run(pk, x.data(), k, y.data(), n, nullptr, m, n, k, sc, nullptr);
    double err = 0, ref2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<float> row = row_of(w, j);
      for (int64_t i = 0; i < m; ++i) {
        double acc = 0;
        for (int64_t c = 0; c < k; ++c) acc += double{x[i * k + c]} * row[c];
        err += (y[i * n + j] - acc) * (y[i * n + j] - acc);
        ref2 += acc * acc;
      }
    }
    CHECK_MESSAGE(err / ref2 < 1e-3, name, " NMSE ", err / ref2);  // only x is quantized (q8_1)
  }

  // transformers' reading of the same file (HF row order), recorded by
  // tools/reference/make_gguf_llama_fixture.py: rows agree exactly after the documented
  // un-permutation, and do NOT agree without it.
  const char* dir = std::getenv("LAYA_FIXTURES");
  REQUIRE(dir != nullptr);
  std::FILE* fx = std::fopen((std::string(dir) + "/gguf/smollm2-hf-rows.bin").c_str(), "rb");
  REQUIRE(fx != nullptr);
  std::vector<uint8_t> fb;
  uint8_t buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, fx)) > 0;)
    fb.insert(fb.end(), buf, buf + got);
  std::fclose(fx);
  REQUIRE(fb.size() > 32);
  REQUIRE(std::memcmp(fb.data(), "LGQK", 4) == 0);
  uint32_t hdr[7];
  std::memcpy(hdr, fb.data() + 4, sizeof hdr);
  const uint32_t hd = hdr[1], n_q = hdr[2], n_k = hdr[3], n_cols = hdr[4], n_ids = hdr[5],
                 dm = hdr[6];
  REQUIRE(hd == 64);
  REQUIRE(fb.size() ==
          32 + 4 * (size_t{n_q} * n_cols + size_t{n_k} * n_cols + n_ids + size_t{n_ids} * dm));
  const float* hf_q = reinterpret_cast<const float*>(fb.data() + 32);
  const float* hf_k = hf_q + n_q * n_cols;
  const int32_t* ids = reinterpret_cast<const int32_t*>(hf_k + n_k * n_cols);
  const float* hf_emb = reinterpret_cast<const float*>(ids + n_ids);
  auto check_rows = [&](const TensorInfo& ti, const float* want, uint32_t n_rows) {
    int exact = 0, unpermuted_equal = 0;
    for (uint32_t r = 0; r < n_rows; ++r) {
      const std::vector<float> got = row_of(ti, r);  // GGUF row r
      const int64_t hf_row = hf_row_of_gguf_row(r, hd);
      bool same = true, naive = true;
      for (uint32_t c = 0; c < n_cols; ++c) {
        same = same && got[c] == want[hf_row * n_cols + c];
        naive = naive && got[c] == want[size_t{r} * n_cols + c];
      }
      exact += same;
      unpermuted_equal += naive;
    }
    CHECK_MESSAGE(exact == static_cast<int>(n_rows), std::string(ti.name));
    CHECK(unpermuted_equal <= 2 * static_cast<int>(n_rows / hd));  // rows 0, hd - 1 of a head
  };
  check_rows(*q, hf_q, n_q);
  check_rows(*f.tensor("blk.0.attn_k.weight"), hf_k, n_k);
  for (uint32_t i = 0; i < n_ids; ++i) {  // token_embd: not permuted, [vocab, d] as stored
    const std::vector<float> got = row_of(*emb, ids[i]);
    CHECK(std::memcmp(got.data(), hf_emb + size_t{i} * dm, 4 * dm) == 0);
  }
}
