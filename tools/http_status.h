// The HTTP status of a refused decision request, as upstream's laya-serve answers it: the mapping
// belongs to what serves (or reports) HTTP, not to the library's error codes (ir/status.h).
#pragma once

#include "ir/status.h"

namespace laya::tools {

// 400 / 413 / 422 for the request-refusal codes (kRequestInvalid / kRequestTooLarge /
// kRequestUnprocessable), else 0.
inline int http_status(StatusCode c) {
  switch (c) {
    case StatusCode::kRequestInvalid:
      return 400;
    case StatusCode::kRequestTooLarge:
      return 413;
    case StatusCode::kRequestUnprocessable:
      return 422;
    default:
      return 0;
  }
}

}  // namespace laya::tools
