#include "ir/status.h"

#include <cstdarg>
#include <cstdio>

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

#if LAYA_STRIP_MESSAGES
Status::Status(StatusCode code, std::string) : code_(code) {}
#else
Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
#endif

std::string Status::to_string() const {
  std::string s = status_code_name(code_);
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

Status status_error(StatusCode code, const char* fmt, ...) {
#if LAYA_STRIP_MESSAGES
  (void)fmt;
  return Status(code, std::string());
#else
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return Status(code, buf);
#endif
}

}  // namespace laya
