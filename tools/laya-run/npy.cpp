#include "tools/laya-run/npy.h"

#include <cstring>
#include <string_view>

#include "ir/file_io.h"

namespace laya::tools {

namespace {

Status bad(const std::string& what) {
  return Status(StatusCode::kInvalidArgument, what);
}

// A cursor over the header dict literal.
struct Header {
  std::string_view s;
  size_t at = 0;

  void skip_space() {
    while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
  }
  bool eat(char c) {
    skip_space();
    if (at < s.size() && s[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  // A quoted string without escapes ('...' or "...").
  bool string(std::string* out) {
    skip_space();
    if (at >= s.size() || (s[at] != '\'' && s[at] != '"')) return false;
    const char q = s[at];
    const size_t end = s.find(q, at + 1);
    if (end == std::string_view::npos) return false;
    *out = std::string(s.substr(at + 1, end - at - 1));
    at = end + 1;
    return true;
  }
  bool word(std::string_view w) {
    skip_space();
    if (s.substr(at, w.size()) != w) return false;
    at += w.size();
    return true;
  }
  // A non-negative decimal integer that fits in int64.
  bool integer(int64_t* out) {
    skip_space();
    const size_t start = at;
    int64_t v = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[at] - '0', &v))
        return false;
      ++at;
    }
    *out = v;
    return at > start;
  }
};

Status parse_shape(Header& h, std::vector<int64_t>* shape) {
  if (!h.eat('(')) return bad("'shape' is not a tuple");
  if (h.eat(')')) return Status::ok();  // ()
  for (;;) {
    int64_t d = 0;
    if (!h.integer(&d)) return bad("'shape' holds something other than non-negative integers");
    if (shape->size() >= static_cast<size_t>(kNpyMaxRank))
      return bad("'shape' has more than " + std::to_string(kNpyMaxRank) + " dimensions");
    shape->push_back(d);
    const bool comma = h.eat(',');
    if (h.eat(')')) return Status::ok();
    if (!comma) return bad("'shape' is not a tuple of integers");
  }
}

Status parse_header(std::string_view text, NpyArray* a) {
  // The dict ends with spaces and a newline (NumPy pads the header with them).
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n' || text[end - 1] == '\0')) --end;
  Header h{text.substr(0, end)};
  bool have_descr = false, have_order = false, have_shape = false;
  if (!h.eat('{')) return bad("the header is not a dict");
  while (!h.eat('}')) {
    std::string key;
    if (!h.string(&key) || !h.eat(':')) return bad("the header dict is malformed");
    if (key == "descr" && !have_descr) {
      have_descr = true;
      if (!h.string(&a->dtype)) return bad("'descr' is not a string");
    } else if (key == "fortran_order" && !have_order) {
      have_order = true;
      if (h.word("True")) return bad("Fortran order; laya-run reads C order");
      if (!h.word("False")) return bad("'fortran_order' is neither True nor False");
    } else if (key == "shape" && !have_shape) {
      have_shape = true;
      LAYA_RETURN_IF_ERROR(parse_shape(h, &a->shape));
    } else {
      return bad("the header has an unexpected or repeated key '" + key + "'");
    }
    if (!h.eat(',')) {
      if (!h.eat('}')) return bad("the header dict is malformed");
      break;
    }
  }
  h.skip_space();
  if (h.at != h.s.size()) return bad("text after the header dict");
  if (!have_descr || !have_order || !have_shape)
    return bad("the header lacks 'descr', 'fortran_order' or 'shape'");
  if (a->dtype != "<f4" && a->dtype != "<i4")
    return bad("dtype " + a->dtype + "; laya-run reads <f4 (float32) and <i4 (int32)");
  return Status::ok();
}

}  // namespace

Result<NpyArray> npy_parse(const uint8_t* bytes, uint64_t size) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0)
    return bad("not a .npy file (no \\x93NUMPY magic)");
  const int major = bytes[6];
  uint64_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = bytes[8] | (uint64_t{bytes[9]} << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return bad("truncated header");
    header_len = bytes[8] | (uint64_t{bytes[9]} << 8) | (uint64_t{bytes[10]} << 16) |
                 (uint64_t{bytes[11]} << 24);
    header_at = 12;
  } else {
    return bad(".npy version " + std::to_string(major) + " (this reader knows 1, 2 and 3)");
  }
  if (header_len > size - header_at) return bad("truncated header");
  NpyArray a;
  LAYA_RETURN_IF_ERROR(parse_header(
      std::string_view(reinterpret_cast<const char*>(bytes + header_at), header_len), &a));
  int64_t count = 1;
  for (int64_t d : a.shape)
    if (__builtin_mul_overflow(count, d, &count))
      return bad("the shape's element count overflows int64");
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(count), uint64_t{4}, &nbytes))
    return bad("the shape's byte size overflows");
  const uint64_t data_at = header_at + header_len;
  if (size - data_at != nbytes)
    return bad(std::to_string(size - data_at) + " data bytes, the shape needs " +
               std::to_string(nbytes));
  a.data.assign(bytes + data_at, bytes + size);
  return a;
}

Result<NpyArray> npy_read(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ir::file_read_all(path, kNpyMaxFileBytes));
  Result<NpyArray> a = npy_parse(bytes.data(), bytes.size());
  if (!a.is_ok()) return Status(a.status().code(), "'" + path + "': " + a.status().message());
  return a;
}

Status npy_write(const std::string& path, const std::string& dtype,
                 const std::vector<int64_t>& shape, const void* data, uint64_t nbytes) {
  std::string header = "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    header += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  header += "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  if (header.size() > 0xffff)
    return status_error(StatusCode::kInvalidArgument, "'%s': a %zu-byte header needs .npy 2.0",
                        path.c_str(), header.size());
  const uint8_t preamble[10] = {0x93,
                                'N',
                                'U',
                                'M',
                                'P',
                                'Y',
                                1,
                                0,
                                static_cast<uint8_t>(header.size() & 0xff),
                                static_cast<uint8_t>(header.size() >> 8)};
  LAYA_ASSIGN_OR_RETURN(ir::FileWriter f, ir::FileWriter::create(path));
  LAYA_RETURN_IF_ERROR(f.write(preamble, sizeof preamble));
  LAYA_RETURN_IF_ERROR(f.write(header.data(), header.size()));
  LAYA_RETURN_IF_ERROR(f.write(data, nbytes));
  return f.commit();
}

}  // namespace laya::tools
