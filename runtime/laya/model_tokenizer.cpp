#include "runtime/laya/model_tokenizer.h"

// TODO(#7): wire runtime/tokenizer (branch tokenizers) once it is on main.
namespace laya::decision {

Result<ModelTokenizer> model_tokenizer(const ir::Graph&) {
  return Status(StatusCode::kUnsupported, "this build has no tokenizer (runtime/tokenizer)");
}

Result<ModelTokenizer> tokenizer_from_file(const std::string&) {
  return Status(StatusCode::kUnsupported, "this build has no tokenizer (runtime/tokenizer)");
}

}  // namespace laya::decision
