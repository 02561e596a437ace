// Symbolic dims, shapes, dtypes, status codes (ir/types.h, ir/status.h).
#include <doctest/doctest.h>

#include <climits>
#include <cstdint>

#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

namespace {

// batch [1, 4], seq [1, 16], past [0, 100], d [2, 8]
std::vector<Symbol> test_symbols() {
  return {{"batch", 1, 4}, {"seq", 1, 16}, {"past", 0, 100}, {"d", 2, 8}};
}
constexpr int kBatch = 0, kSeq = 1, kPast = 2, kD = 3;

}  // namespace

TEST_CASE("Dim arithmetic: sums of symbols, multiples, constants, equality") {
  const Dim kv = plus(Dim::sym(kPast), Dim::sym(kSeq));
  CHECK(kv.coef[kPast] == 1);
  CHECK(kv.coef[kSeq] == 1);
  CHECK(kv.c == 0);
  CHECK_FALSE(kv.is_fixed());
  CHECK(kv == plus(Dim::sym(kSeq), Dim::sym(kPast)));  // commutative
  CHECK_FALSE(kv == Dim::sym(kSeq));

  const Dim three_d = times(Dim::sym(kD), 3);
  CHECK(three_d == Dim::sym(kD, 3));
  CHECK(three_d == plus(Dim::sym(kD), Dim::sym(kD), Dim::sym(kD)));
  const Dim affine = times(plus(Dim::sym(kSeq), Dim::fixed(2)), 4);  // 4 * seq + 8
  CHECK(affine.c == 8);
  CHECK(affine.coef[kSeq] == 4);
  CHECK(Dim::fixed(7).is_fixed());
  CHECK(Dim::fixed(7) == plus(Dim::fixed(3), Dim::fixed(4)));
  CHECK_FALSE(Dim::fixed(7) == Dim::fixed(8));
  CHECK(plus(Dim::sym(kSeq), Dim::sym(kSeq, -1)) == Dim::fixed(0));  // cancels to a constant
  CHECK(plus(Dim::sym(kSeq), Dim::sym(kSeq, -1)).is_fixed());

  const int64_t at[kMaxSymbols] = {2, 5, 30, 6};
  CHECK(kv.eval(at) == 35);
  CHECK(three_d.eval(at) == 18);
  CHECK(affine.eval(at) == 28);
  CHECK(plus(Dim::sym(kPast, 2), Dim::sym(kSeq, -3), Dim::fixed(5)).eval(at) == 60 - 15 + 5);
}

TEST_CASE("Dim arithmetic is checked: an int32 coefficient or the int64 constant never wraps") {
  CHECK(dim_add(Dim::sym(kSeq, INT32_MAX), Dim::sym(kSeq, 1)).status().code() ==
        StatusCode::kOutOfRange);
  CHECK(dim_add(Dim::sym(kSeq, INT32_MIN), Dim::sym(kSeq, -1)).status().code() ==
        StatusCode::kOutOfRange);
  CHECK(dim_add(Dim::fixed(INT64_MAX), Dim::fixed(1)).status().code() == StatusCode::kOutOfRange);
  CHECK(dim_mul(Dim::sym(kD, 1 << 16), 1 << 16).status().code() == StatusCode::kOutOfRange);
  CHECK(dim_mul(Dim::sym(kD), int64_t{1} << 31).status().code() == StatusCode::kOutOfRange);
  CHECK(dim_mul(Dim::fixed(int64_t{1} << 62), 2).status().code() == StatusCode::kOutOfRange);
  CHECK(dim_mul(Dim::sym(kD), -1).status().code() == StatusCode::kOk);
  // The edges themselves are fine.
  Result<Dim> edge = dim_add(Dim::sym(kSeq, INT32_MAX - 1), Dim::sym(kSeq, 1));
  REQUIRE(edge.is_ok());
  CHECK(edge->coef[kSeq] == INT32_MAX);
  Result<Dim> neg = dim_mul(Dim::sym(kD, INT32_MAX), -1);
  REQUIRE(neg.is_ok());
  CHECK(neg->coef[kD] == -INT32_MAX);
}

TEST_CASE("dim_min / dim_max over the symbols' bounds, incl. negative coefficients") {
  const std::vector<Symbol> s = test_symbols();
  CHECK(dim_min(Dim::fixed(384), s) == 384);
  CHECK(dim_max(Dim::fixed(384), s) == 384);
  CHECK(dim_min(Dim::sym(kSeq), s) == 1);
  CHECK(dim_max(Dim::sym(kSeq), s) == 16);
  const Dim kv = plus(Dim::sym(kPast), Dim::sym(kSeq));
  CHECK(dim_min(kv, s) == 1);
  CHECK(dim_max(kv, s) == 116);
  CHECK(dim_min(Dim::sym(kD, 3), s) == 6);
  CHECK(dim_max(Dim::sym(kD, 3), s) == 24);
  // 10 - seq: smallest at seq = 16, largest at seq = 1
  const Dim ten_minus_seq = plus(Dim::fixed(10), Dim::sym(kSeq, -1));
  CHECK(dim_min(ten_minus_seq, s) == -6);
  CHECK(dim_max(ten_minus_seq, s) == 9);
  // 2 * past - 3 * seq + 5
  const Dim mixed = plus(Dim::sym(kPast, 2), Dim::sym(kSeq, -3), Dim::fixed(5));
  CHECK(dim_min(mixed, s) == 0 - 48 + 5);
  CHECK(dim_max(mixed, s) == 200 - 3 + 5);
}

TEST_CASE("dim_to_string / shape_to_string") {
  const std::vector<Symbol> s = test_symbols();
  CHECK(dim_to_string(Dim::fixed(384), s) == "384");
  CHECK(dim_to_string(Dim::fixed(0), s) == "0");
  CHECK(dim_to_string(Dim::fixed(-3), s) == "-3");
  CHECK(dim_to_string(Dim::sym(kSeq), s) == "seq");
  CHECK(dim_to_string(plus(Dim::sym(kPast), Dim::sym(kSeq)), s) == "seq + past");
  CHECK(dim_to_string(Dim::sym(kD, 3), s) == "3 * d");
  CHECK(dim_to_string(plus(Dim::sym(kSeq), Dim::fixed(-1)), s) == "seq - 1");
  CHECK(dim_to_string(plus(Dim::sym(kSeq, 2), Dim::fixed(1)), s) == "2 * seq + 1");
  CHECK(dim_to_string(plus(Dim::fixed(10), Dim::sym(kSeq, -1)), s) == "-seq + 10");
  CHECK(dim_to_string(plus(Dim::sym(kPast, 2), Dim::sym(kSeq, -3), Dim::fixed(5)), s) ==
        "-3 * seq + 2 * past + 5");
  CHECK(dim_to_string(Dim::sym(6), s) == "s6");  // a symbol the graph does not define

  CHECK(shape_to_string(Shape{}, s) == "[]");
  CHECK(shape_to_string(Shape::fixed({384}), s) == "[384]");
  CHECK(shape_to_string(Shape::of({Dim::sym(kBatch), Dim::sym(kSeq), Dim::fixed(384)}), s) ==
        "[batch, seq, 384]");
  CHECK(shape_to_string(Shape::of({Dim::sym(kBatch), plus(Dim::sym(kPast), Dim::sym(kSeq))}), s) ==
        "[batch, seq + past]");
}

TEST_CASE("Shape::of / Shape::fixed, equality and is_fixed") {
  const Shape a = Shape::fixed({2, 3, 4});
  CHECK(a.rank == 3);
  CHECK(a.back() == Dim::fixed(4));
  CHECK(a.is_fixed());
  CHECK(a == Shape::of({Dim::fixed(2), Dim::fixed(3), Dim::fixed(4)}));
  CHECK_FALSE(a == Shape::fixed({2, 3}));
  CHECK_FALSE(a == Shape::fixed({2, 3, 5}));
  const Shape b = Shape::of({Dim::sym(kSeq), Dim::fixed(4)});
  CHECK_FALSE(b.is_fixed());
  CHECK_FALSE(b == Shape::fixed({1, 4}));
  CHECK(Shape{}.is_fixed());
  CHECK(Shape::fixed({1, 2, 3, 4, 5, 6}).rank == kMaxRank);
}

TEST_CASE("shape_eval at symbol values; a negative dimension is kOutOfRange") {
  const Shape s = Shape::of(
      {Dim::sym(kBatch), plus(Dim::sym(kPast), Dim::sym(kSeq)), Dim::sym(kD, 3), Dim::fixed(64)});
  const int64_t at[kMaxSymbols] = {2, 5, 7, 4};
  Extents e;
  CHECK_OK(shape_eval(s, at, &e));
  REQUIRE(e.rank == 4);
  CHECK(e.d[0] == 2);
  CHECK(e.d[1] == 12);
  CHECK(e.d[2] == 12);
  CHECK(e.d[3] == 64);
  CHECK(e.count() == 2 * 12 * 12 * 64);
  CHECK(e.rows() == 2 * 12 * 12);
  CHECK(e.back() == 64);

  Extents scalar;
  CHECK_OK(shape_eval(Shape{}, at, &scalar));
  CHECK(scalar.rank == 0);
  CHECK(scalar.count() == 1);

  const Shape neg = Shape::of({Dim::fixed(3), plus(Dim::sym(kSeq), Dim::fixed(-8))});
  CHECK_STATUS(shape_eval(neg, at, &e), StatusCode::kOutOfRange, "dimension 1", "-3");
  const int64_t at_ok[kMaxSymbols] = {1, 8, 0, 2};
  CHECK_OK(shape_eval(neg, at_ok, &e));
  CHECK(e.d[1] == 0);
}

TEST_CASE("shape_max_count: element count at the max bounds; overflow is kFileSizeOverflow") {
  const std::vector<Symbol> s = test_symbols();
  Result<int64_t> n = shape_max_count(
      Shape::of({Dim::sym(kBatch), plus(Dim::sym(kPast), Dim::sym(kSeq)), Dim::fixed(64)}), s);
  REQUIRE(n.is_ok());
  CHECK(*n == 4 * 116 * 64);
  Result<int64_t> one = shape_max_count(Shape{}, s);
  REQUIRE(one.is_ok());
  CHECK(*one == 1);

  const std::vector<Symbol> big = {{"n", 1, int64_t{1} << 22}};
  const Shape cube = Shape::of({Dim::sym(0), Dim::sym(0), Dim::sym(0)});  // 2^66
  Result<int64_t> over = shape_max_count(cube, big);
  CHECK_STATUS(over.status(), StatusCode::kFileSizeOverflow, "[n, n, n]");
  Result<int64_t> fixed_over = shape_max_count(Shape::fixed({int64_t{1} << 40, 1 << 24}), {});
  CHECK(fixed_over.status().code() == StatusCode::kFileSizeOverflow);
  Result<int64_t> fits = shape_max_count(Shape::fixed({int64_t{1} << 40, 1 << 22}), {});
  REQUIRE(fits.is_ok());
  CHECK(*fits == int64_t{1} << 62);
}

TEST_CASE("dim bounds near int64 limits saturate instead of overflowing") {
  // A symbol bound from a corrupt file: 4 * n with n up to 2^62 does not fit in int64.
  const std::vector<Symbol> huge = {{"n", 1, int64_t{1} << 62}};
  CHECK(dim_max(Dim::sym(0, 4), huge) == INT64_MAX);
  CHECK(dim_min(Dim::sym(0, -4), huge) == INT64_MIN);
  CHECK(dim_max(Dim::sym(0, 1), huge) == int64_t{1} << 62);
  CHECK(dim_max(plus(Dim::sym(0, 1), Dim::fixed(INT64_MAX)), huge) == INT64_MAX);
  Result<int64_t> n = shape_max_count(Shape::of({Dim::sym(0, 4)}), huge);
  CHECK(n.status().code() == StatusCode::kFileSizeOverflow);

  Graph g;
  g.symbols = huge;
  Value v;
  v.name = "x";
  v.kind = ValueKind::kInput;
  v.shape = Shape::of({Dim::sym(0, 4)});
  g.values.push_back(v);
  g.inputs.push_back(0);
  CHECK_STATUS(graph_verify(g), StatusCode::kFileSizeOverflow, "'x'");
}

TEST_CASE("dtype table: names, kinds, bytes for every dtype") {
  struct Want {
    DType dtype;
    const char* name;
    DTypeKind kind;
    uint64_t bytes_for_64;
  };
  const Want want[] = {
      {DType::kF32, "f32", DTypeKind::kFloat, 256},
      {DType::kF16, "f16", DTypeKind::kFloat, 128},
      {DType::kBF16, "bf16", DTypeKind::kFloat, 128},
      {DType::kI8, "i8", DTypeKind::kInteger, 64},
      {DType::kU8, "u8", DTypeKind::kInteger, 64},
      {DType::kI32, "i32", DTypeKind::kInteger, 256},
      {DType::kQ8_0, "q8_0", DTypeKind::kBlock, 68},
      {DType::kQ4_0, "q4_0", DTypeKind::kBlock, 36},
      {DType::kQ4_1, "q4_1", DTypeKind::kBlock, 40},
      {DType::kQ4_K, "q4_K", DTypeKind::kBlock, 0},  // K-quants: 256-element super-blocks
      {DType::kQ5_K, "q5_K", DTypeKind::kBlock, 0},
      {DType::kQ6_K, "q6_K", DTypeKind::kBlock, 0},
      {DType::kQ5_0, "q5_0", DTypeKind::kBlock, 44},
      {DType::kQ5_1, "q5_1", DTypeKind::kBlock, 48},
  };
  // A new dtype must be added here (and to every switch over dtypes).
  REQUIRE(sizeof want / sizeof want[0] == static_cast<size_t>(DType::kCount));
  int overflowing_blocks = 0;
  for (const Want& w : want) {
    CAPTURE(std::string(w.name));
    CHECK(std::string(dtype_name(w.dtype)) == w.name);
    CHECK(dtype_info(w.dtype).kind == w.kind);
    Result<DType> parsed = dtype_from_name(w.name);
    REQUIRE(parsed.is_ok());
    CHECK(*parsed == w.dtype);
    const int64_t be = dtype_info(w.dtype).block_elems;
    if (be == 256) {  // K-quants: 64 elements are not a whole super-block
      CHECK(dtype_bytes(w.dtype, 64).status().code() == StatusCode::kGraphShapeMismatch);
      Result<uint64_t> two = dtype_bytes(w.dtype, 512);
      REQUIRE(two.is_ok());
      CHECK(*two == 2 * dtype_info(w.dtype).block_bytes);
    } else {
      Result<uint64_t> b = dtype_bytes(w.dtype, 64);
      REQUIRE(b.is_ok());
      CHECK(*b == w.bytes_for_64);
    }
    Result<uint64_t> zero = dtype_bytes(w.dtype, 0);
    REQUIRE(zero.is_ok());
    CHECK(*zero == 0);
    CHECK(dtype_bytes(w.dtype, -1).status().code() == StatusCode::kGraphShapeMismatch);
    if (w.kind == DTypeKind::kBlock) {
      CHECK((be == 32 || be == 256));
      CHECK_STATUS(dtype_bytes(w.dtype, 33).status(), StatusCode::kGraphShapeMismatch, w.name,
                   "33");
      CHECK(dtype_bytes(w.dtype, 16).status().code() == StatusCode::kGraphShapeMismatch);
      // The largest whole number of blocks; its byte count exceeds int64 only when a block holds
      // more bytes than elements (q8_0: 34 per 32).
      const int64_t most = INT64_MAX / be * be;
      const uint64_t blocks = static_cast<uint64_t>(most / be);
      const uint64_t block_bytes = dtype_info(w.dtype).block_bytes;
      Result<uint64_t> big = dtype_bytes(w.dtype, most);
      if (blocks > static_cast<uint64_t>(INT64_MAX) / block_bytes) {
        CHECK_STATUS(big.status(), StatusCode::kFileSizeOverflow, w.name);
        ++overflowing_blocks;
      } else {
        REQUIRE(big.is_ok());
        CHECK(*big == blocks * block_bytes);
      }
    } else {
      Result<uint64_t> odd = dtype_bytes(w.dtype, 33);
      REQUIRE(odd.is_ok());
      CHECK(*odd == 33 * dtype_info(w.dtype).block_bytes);
    }
  }
  CHECK(overflowing_blocks == 1);  // q8_0
  // Scalar overflow: INT64_MAX elements of a 1-byte type fit exactly; of a 2-byte type they do not.
  Result<uint64_t> max_i8 = dtype_bytes(DType::kI8, INT64_MAX);
  REQUIRE(max_i8.is_ok());
  CHECK(*max_i8 == static_cast<uint64_t>(INT64_MAX));
  CHECK(dtype_bytes(DType::kF16, INT64_MAX / 2 + 1).status().code() ==
        StatusCode::kFileSizeOverflow);
  CHECK(dtype_bytes(DType::kF32, INT64_MAX / 4 + 1).status().code() ==
        StatusCode::kFileSizeOverflow);
  Result<uint64_t> max_f32 = dtype_bytes(DType::kF32, INT64_MAX / 4);
  REQUIRE(max_f32.is_ok());

  CHECK(dtype_from_name("f64").status().code() == StatusCode::kInvalidArgument);
  CHECK(dtype_from_name("").status().code() == StatusCode::kInvalidArgument);
  CHECK(dtype_is_valid(0));
  CHECK(dtype_is_valid(static_cast<uint32_t>(DType::kCount) - 1));
  CHECK_FALSE(dtype_is_valid(static_cast<uint32_t>(DType::kCount)));
}

TEST_CASE("op table and status codes") {
  CHECK(std::string(op_name(Op::kAttention)) == "attention");
  CHECK(op_info(Op::kSplit).n_outputs == -1);
  CHECK(op_info(Op::kMatMul).min_inputs == 2);
  CHECK(op_info(Op::kMatMul).max_inputs == 3);
  CHECK(op_is_valid(static_cast<uint32_t>(Op::kCount) - 1));
  CHECK_FALSE(op_is_valid(static_cast<uint32_t>(Op::kCount)));

  CHECK(std::string(status_code_name(StatusCode::kFileTruncated)) == "kFileTruncated");
  CHECK(std::string(status_code_name(static_cast<StatusCode>(999))) == "kUnknown");
  CHECK(status_is_file_error(StatusCode::kFileSizeOverflow));
  CHECK_FALSE(status_is_file_error(StatusCode::kGraphCycle));
  CHECK(status_is_graph_error(StatusCode::kGraphCycle));
  const Status s = status_error(StatusCode::kGraphCycle, "node %d '%s'", 3, "x");
  CHECK(s.to_string() == (kHaveMessages ? "kGraphCycle: node 3 'x'" : "kGraphCycle"));
  CHECK(Status().is_ok());
  CHECK(std::string(Status().message()).empty());
  // An empty message, even a view with no data at all (UBSan checks the copy).
  CHECK(std::string(Status(StatusCode::kInternal, std::string_view()).message()).empty());
  CHECK(std::string(status_error(StatusCode::kInternal, "%s", "").message()).empty());
  Result<int> r = Status();  // a Result from an ok Status is an internal error, not a value
  CHECK(r.status().code() == StatusCode::kInternal);
}

TEST_CASE("Status keeps its message inline: long messages are cut at a character boundary") {
  if (!kHaveMessages) return;
  const std::string fits(Status::kMaxMessage, 'a');
  CHECK(std::string(Status(StatusCode::kInternal, fits).message()) == fits);
  // One byte too many: cut, and the cut is marked.
  const std::string over = fits + "b";
  const std::string got = Status(StatusCode::kInternal, over).message();
  CHECK(got.size() == Status::kMaxMessage);
  CHECK(got.substr(got.size() - 3) == "...");
  // A multi-byte character across the cut is dropped whole, never split.
  std::string utf8(Status::kMaxMessage - 4, 'a');
  utf8 += "\u00e9\u00e9\u00e9";  // 2 bytes each
  const std::string cut = Status(StatusCode::kInternal, utf8).message();
  CHECK(cut == std::string(Status::kMaxMessage - 4, 'a') + "...");
  // status_error cuts the same way, and copies keep the text.
  const Status long_fmt = status_error(StatusCode::kIoError, "%s%s", fits.c_str(), "tail");
  const Status copy = long_fmt;
  CHECK(std::string(copy.message()).size() == Status::kMaxMessage);
  CHECK(std::string(copy.message()).substr(0, 10) == "aaaaaaaaaa");
  CHECK(copy.code() == StatusCode::kIoError);
}
