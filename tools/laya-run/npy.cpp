#include "tools/laya-run/npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace laya::tools {

namespace {

// Value of `key` in the header dict: the text after "'key':" up to the next top-level ',' or '}'.
std::string dict_value(const std::string& header, const std::string& key) {
  const std::string k = "'" + key + "':";
  const size_t at = header.find(k);
  if (at == std::string::npos) return "";
  size_t i = at + k.size();
  while (i < header.size() && header[i] == ' ') ++i;
  size_t end = i;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(i, end - i);
}

}  // namespace

Result<NpyArray> npy_read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return status_error(StatusCode::kIoError, "cannot open '%s'", path.c_str());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return status_error(StatusCode::kInvalidArgument, "'%s' is not a .npy file", path.c_str());
  const int major = bytes[6];
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = bytes[8] | (size_t{bytes[9]} << 8);
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return status_error(StatusCode::kInvalidArgument, "'%s': truncated header", path.c_str());
    header_len =
        bytes[8] | (size_t{bytes[9]} << 8) | (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
    header_at = 12;
  } else {
    return status_error(StatusCode::kInvalidArgument, "'%s': .npy version %d", path.c_str(), major);
  }
  if (header_at + header_len > bytes.size())
    return status_error(StatusCode::kInvalidArgument, "'%s': truncated header", path.c_str());
  const std::string header(bytes.begin() + header_at, bytes.begin() + header_at + header_len);
  NpyArray a;
  std::string descr = dict_value(header, "descr");
  if (descr.size() >= 2) descr = descr.substr(1, descr.size() - 2);  // strip quotes
  if (descr != "<f4" && descr != "<i4")
    return status_error(StatusCode::kInvalidArgument,
                        "'%s': dtype %s; laya-run reads <f4 (float32) and <i4 (int32)",
                        path.c_str(), descr.c_str());
  a.dtype = descr;
  if (dict_value(header, "fortran_order") != "False")
    return status_error(StatusCode::kInvalidArgument, "'%s': Fortran order", path.c_str());
  std::string shape = dict_value(header, "shape");
  int64_t count = 1;
  for (char& c : shape)
    if (c == '(' || c == ')' || c == ',') c = ' ';
  std::istringstream is(shape);
  long long d;
  while (is >> d) {
    if (d < 0)
      return status_error(StatusCode::kInvalidArgument, "'%s': negative dim", path.c_str());
    a.shape.push_back(d);
    count *= d;
  }
  const size_t nbytes = static_cast<size_t>(count) * 4;
  if (bytes.size() - header_at - header_len != nbytes)
    return status_error(StatusCode::kInvalidArgument, "'%s': %zu data bytes, shape needs %zu",
                        path.c_str(), bytes.size() - header_at - header_len, nbytes);
  a.data.assign(bytes.begin() + header_at + header_len, bytes.end());
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
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return status_error(StatusCode::kIoError, "cannot write '%s'", path.c_str());
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
  bool ok = std::fwrite(preamble, 1, 10, f) == 10 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, 1, nbytes, f) == nbytes;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return status_error(StatusCode::kIoError, "writing '%s' failed", path.c_str());
  }
  return Status::ok();
}

}  // namespace laya::tools
