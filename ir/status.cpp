#include "ir/status.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace laya {

const char* status_code_name(StatusCode code) {
  switch (code) {
#define LAYA_X(name, value, desc) \
  case StatusCode::name:          \
    return #name;
    LAYA_STATUS_CODES(LAYA_X)
#undef LAYA_X
  }
  return "kUnknown";
}

namespace {

// The length of `s` cut to `max` bytes without splitting a UTF-8 sequence.
size_t utf8_cut(const char* s, size_t len, size_t max) {
  if (len <= max) return len;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

Status::Status(StatusCode code, std::string_view message) : code_(code) {
#if LAYA_STRIP_MESSAGES
  (void)message;
#else
  if (message.size() <= kMaxMessage) {
    len_ = static_cast<uint16_t>(message.size());
    // memcpy from a null pointer is undefined even for 0 bytes (status_error passes an empty view)
    if (len_ != 0) std::memcpy(msg_, message.data(), len_);
  } else {
    len_ = static_cast<uint16_t>(utf8_cut(message.data(), message.size(), kMaxMessage - 3));
    std::memcpy(msg_, message.data(), len_);
    std::memcpy(msg_ + len_, "...", 3);
    len_ += 3;
  }
  msg_[len_] = '\0';
#endif
}

Status& Status::operator=(const Status& o) {
  if (this == &o) return *this;
  code_ = o.code_;
  len_ = o.len_;
  std::memcpy(msg_, o.msg_, static_cast<size_t>(len_) + (kMaxMessage > 0 ? 1 : 0));
  return *this;
}

std::string Status::to_string() const {
  std::string s = status_code_name(code_);
  if (len_ > 0) {
    s += ": ";
    s.append(msg_, len_);
  }
  return s;
}

Status status_error(StatusCode code, const char* fmt, ...) {
  Status st(code, std::string_view());
#if LAYA_STRIP_MESSAGES
  (void)fmt;
#else
  char buf[Status::kMaxMessage + 1];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) {
    // A longer text was cut by vsnprintf; kMaxMessage + 1 tells the constructor to mark the cut.
    const size_t len = std::min(static_cast<size_t>(n), Status::kMaxMessage + 1);
    st = Status(code, std::string_view(buf, len));
  }
#endif
  return st;
}

}  // namespace laya
