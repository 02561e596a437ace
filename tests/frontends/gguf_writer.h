// A minimal GGUF writer for tests (frontends/gguf.h documents the layout): metadata of any type,
// tensors at chosen offsets, and header counts that can lie, so tests can write valid and malformed
// files alike.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace laya::test {

struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof v);
    std::memcpy(b.data() + at, &v, sizeof v);
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  uint64_t offset = 0;
  std::vector<uint8_t> data;  // written at data_offset + offset
};

struct Writer {
  uint32_t version = 3;
  uint64_t alignment = 32;  // for the layout only; add a general.alignment KV to change the file's
  std::vector<std::function<void(Bytes&)>> kvs;
  std::vector<TensorSpec> tensors;
  // Counts written in the header (default: the real ones).
  int64_t kv_count_override = -1, tensor_count_override = -1;

  Writer& kv(const std::string& key, uint32_t type, std::function<void(Bytes&)> value) {
    kvs.push_back([=](Bytes& o) {
      o.str(key).put(type);
      value(o);
    });
    return *this;
  }
  Writer& u32(const std::string& key, uint32_t v) {
    return kv(key, 4, [=](Bytes& o) { o.put(v); });
  }
  Writer& i32(const std::string& key, int32_t v) {
    return kv(key, 5, [=](Bytes& o) { o.put(v); });
  }
  Writer& f32(const std::string& key, float v) {
    return kv(key, 6, [=](Bytes& o) { o.put(v); });
  }
  Writer& boolean(const std::string& key, bool v) {
    return kv(key, 7, [=](Bytes& o) { o.put<uint8_t>(v ? 1 : 0); });
  }
  Writer& string(const std::string& key, const std::string& v) {
    return kv(key, 8, [=](Bytes& o) { o.str(v); });
  }
  Writer& strings(const std::string& key, const std::vector<std::string>& v) {
    return kv(key, 9, [=](Bytes& o) {
      o.put<uint32_t>(8).put<uint64_t>(v.size());
      for (const std::string& s : v) o.str(s);
    });
  }
  template <class T>
  Writer& array(const std::string& key, uint32_t elem_type, const std::vector<T>& v) {
    return kv(key, 9, [=](Bytes& o) {
      o.put<uint32_t>(elem_type).put<uint64_t>(v.size());
      for (T x : v) o.put(x);
    });
  }
  Writer& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                 std::vector<uint8_t> data, int64_t offset = -1) {
    uint64_t off = 0;
    if (offset >= 0) {
      off = static_cast<uint64_t>(offset);
    } else if (!tensors.empty()) {
      const TensorSpec& last = tensors.back();
      off = (last.offset + last.data.size() + alignment - 1) / alignment * alignment;
    }
    tensors.push_back({name, std::move(ne), type, off, std::move(data)});
    return *this;
  }

  std::vector<uint8_t> bytes() const {
    Bytes o;
    o.put<uint32_t>(0x46554747).put(version);
    o.put<uint64_t>(tensor_count_override >= 0 ? static_cast<uint64_t>(tensor_count_override)
                                               : tensors.size());
    o.put<uint64_t>(kv_count_override >= 0 ? static_cast<uint64_t>(kv_count_override) : kvs.size());
    for (const auto& k : kvs) k(o);
    for (const TensorSpec& t : tensors) {
      o.str(t.name).put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t n : t.ne) o.put(n);
      o.put(t.type).put(t.offset);
    }
    while (o.b.size() % alignment != 0) o.put<uint8_t>(0);
    const size_t data_start = o.b.size();
    for (const TensorSpec& t : tensors) {
      if (o.b.size() < data_start + t.offset + t.data.size())
        o.b.resize(data_start + t.offset + t.data.size(), 0);
      if (!t.data.empty())  // memcpy from a null pointer is undefined even for 0 bytes
        std::memcpy(o.b.data() + data_start + t.offset, t.data.data(), t.data.size());
    }
    return o.b;
  }
};

}  // namespace laya::test
