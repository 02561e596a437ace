// Status codes and Result<T>: the one error type of the Laya runtime.
//
// Error policy (applies to every library folder: ir/, kernels/, hal/, runtime/):
//  - Bad input of any kind (model file, graph, request, shapes, memory too small) returns a Status
//    whose message names the problem; the library never aborts, never throws, never exits.
//  - Checks happen in load / prepare / reshape. Execute validates nothing except indices read from
//    tensors (token ids, positions); its internal invariants are debug asserts.
//  - Codes are grouped in ranges so callers can test a family (`status_is_file_error`).
//  - Making, copying and returning a Status never allocates: the message lives inside it (at most
//    Status::kMaxMessage bytes; longer ones are cut and end in "..."), so the execute path may
//    fail with a message and still touch no heap (tests/runtime/test_no_alloc.cpp).
//  - `-Dstrip_messages=true` (LAYA_STRIP_MESSAGES) keeps the codes and drops the strings, for
//    firmware images where every byte of .rodata counts (a Status is then just its code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#ifndef LAYA_STRIP_MESSAGES
#define LAYA_STRIP_MESSAGES 0
#endif

namespace laya {

// X(name, value, short description)
#define LAYA_STATUS_CODES(X)                                                           \
  X(kOk, 0, "ok")                                                                      \
  /* 1xx: the caller asked for something invalid */                                    \
  X(kInvalidArgument, 100, "invalid argument")                                         \
  X(kOutOfRange, 101, "out of range")                                                  \
  X(kNotFound, 102, "not found")                                                       \
  X(kFailedPrecondition, 103, "wrong lifecycle phase")                                 \
  X(kResourceExhausted, 104, "out of room (a memory region, KV cells, a match limit)") \
  X(kIndexOutOfRange, 105, "index read from a tensor is out of range")                 \
  X(kDeadlineExceeded, 106, "deadline passed")                                         \
  X(kAborted, 107, "aborted by the caller")                                            \
  X(kLimitExceeded, 108, "over the context's limits")                                  \
  /* 11x: a decision request is refused (upstream's error classes) */                  \
  X(kRequestInvalid, 110, "malformed request")                                         \
  X(kRequestTooLarge, 111, "request over a limit")                                     \
  X(kRequestUnprocessable, 112, "request cannot be answered")                          \
  /* 2xx: the model file is unreadable or inconsistent */                              \
  X(kIoError, 200, "i/o error")                                                        \
  X(kFileEmpty, 201, "file is empty")                                                  \
  X(kFileTruncated, 202, "file is truncated")                                          \
  X(kFileBadIdentifier, 203, "not a .laya file")                                       \
  X(kFileUnsupportedVersion, 204, "unsupported format version")                        \
  X(kFileCorrupt, 205, "file structure is corrupt")                                    \
  X(kFileOffsetOutOfBounds, 206, "offset or size outside the weight section")          \
  X(kFileMisaligned, 207, "weight offset is not aligned")                              \
  X(kFileSizeOverflow, 208, "tensor size overflows")                                   \
  X(kFileSizeMismatch, 209, "stored size does not match shape and dtype")              \
  /* 3xx: the graph is not well formed */                                              \
  X(kGraphInvalid, 300, "invalid graph")                                               \
  X(kGraphUnknownOp, 301, "unknown op")                                                \
  X(kGraphUndefinedValue, 302, "node reads a value that is not defined before it")     \
  X(kGraphCycle, 303, "graph has a cycle")                                             \
  X(kGraphDtypeMismatch, 304, "dtype mismatch")                                        \
  X(kGraphQuantMismatch, 305, "quantization parameters do not fit the dtype")          \
  X(kGraphShapeMismatch, 306, "shape mismatch")                                        \
  X(kGraphBadAttribute, 307, "bad attribute")                                          \
  /* 4xx: a backend cannot do it */                                                    \
  X(kUnsupported, 400, "unsupported")                                                  \
  X(kBackendError, 401, "backend error")                                               \
  X(kBackendVersionMismatch, 402, "backend built against another HAL API version")     \
  /* 5xx: a bug in the runtime */                                                      \
  X(kInternal, 500, "internal error")

enum class StatusCode : uint16_t {
#define LAYA_X(name, value, desc) name = value,
  LAYA_STATUS_CODES(LAYA_X)
#undef LAYA_X
};

// "kFileTruncated" etc.; "kUnknown" for a value not in the list.
const char* status_code_name(StatusCode code);
inline bool status_is_file_error(StatusCode c) {
  return static_cast<uint16_t>(c) >= 200 && static_cast<uint16_t>(c) < 300;
}
inline bool status_is_graph_error(StatusCode c) {
  return static_cast<uint16_t>(c) >= 300 && static_cast<uint16_t>(c) < 400;
}

// A code plus a message held inline. Default-constructed = ok. Never allocates.
class [[nodiscard]] Status {
 public:
  // bytes, without the terminating NUL (0 with -Dstrip_messages=true)
  static constexpr size_t kMaxMessage = LAYA_STRIP_MESSAGES ? 0 : 383;

  Status() = default;
  // Copies `message` (cut to kMaxMessage bytes, at a UTF-8 character boundary, ending in "...").
  Status(StatusCode code, std::string_view message);
  Status(const Status& o) { *this = o; }
  Status& operator=(const Status& o);

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // Never null; "" when ok or when messages are stripped.
  const char* message() const { return msg_; }
  // "kFileTruncated: <message>", for logs and CLI output (allocates: not for the execute path).
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  uint16_t len_ = 0;
  char msg_[kMaxMessage + 1] = {};
};

// printf-style constructor: `return status_error(StatusCode::kFileTruncated, "tensor %s ...", n);`
// Formats straight into the Status (no allocation).
Status status_error(StatusCode code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Either a T or a non-ok Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {
    if (status_.is_ok()) status_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // Precondition: is_ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

#define LAYA_CONCAT_INNER(a, b) a##b
#define LAYA_CONCAT(a, b) LAYA_CONCAT_INNER(a, b)

#define LAYA_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::laya::Status laya_status_ = (expr);           \
    if (!laya_status_.is_ok()) return laya_status_; \
  } while (0)

#define LAYA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()

// LAYA_ASSIGN_OR_RETURN(auto x, make_x());
#define LAYA_ASSIGN_OR_RETURN(lhs, expr) \
  LAYA_ASSIGN_OR_RETURN_IMPL(LAYA_CONCAT(laya_result_, __LINE__), lhs, expr)

}  // namespace laya
