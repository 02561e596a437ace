#include "runtime/text/tokenizer/spec.h"

namespace laya::tok {

#define LAYA_TOK_NAME_FN(fn, Enum, LIST) \
  const char* fn(Enum k) {               \
    switch (k) { LIST(LAYA_X) }          \
    return "?";                          \
  }
#define LAYA_X(name, json)                         \
  case std::remove_reference_t<decltype(k)>::name: \
    return json;

LAYA_TOK_NAME_FN(model_kind_name, ModelKind, LAYA_TOK_MODEL_KINDS)
LAYA_TOK_NAME_FN(split_behavior_name, SplitBehavior, LAYA_TOK_SPLIT_BEHAVIORS)
LAYA_TOK_NAME_FN(normalizer_kind_name, NormalizerKind, LAYA_TOK_NORMALIZER_KINDS)
LAYA_TOK_NAME_FN(pre_tokenizer_kind_name, PreTokenizerKind, LAYA_TOK_PRE_TOKENIZER_KINDS)
LAYA_TOK_NAME_FN(decoder_kind_name, DecoderKind, LAYA_TOK_DECODER_KINDS)

#undef LAYA_X
#undef LAYA_TOK_NAME_FN

Status parse_merge_line(std::string_view line, size_t index,
                        std::pair<std::string, std::string>* out) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) {
    return status_error(StatusCode::kInvalidArgument,
                        "merge %zu ('%.*s') is not two tokens separated by one space", index,
                        static_cast<int>(std::min<size_t>(line.size(), 64)), line.data());
  }
  out->first = std::string(line.substr(0, sp));
  out->second = std::string(line.substr(sp + 1));
  return Status::ok();
}

}  // namespace laya::tok
