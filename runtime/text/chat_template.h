// Chat templates of decoder LMs, recognized from the GGUF `tokenizer.chat_template` string
// (frontends/gguf.h: TokenizerData::chat_template) and rendered without a Jinja engine.
//
//   LAYA_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::recognize(td.chat_template, bos_text));
//   LAYA_ASSIGN_OR_RETURN(std::string text, t.render(messages, /*add_generation_prompt=*/true));
//   // tokenize `text` with special tokens parsed; add BOS when the GGUF's add_bos_token says so
//   // and the text does not already start with it (renders_bos()).
//
// Recognized families (what the template text must contain; nothing else is interpreted):
//  - kChatMl (SmolLM2, Qwen2 / Qwen2.5): "<|im_start|>" and "<|im_end|>". Each message renders as
//    "<|im_start|>" role "\n" content "<|im_end|>\n"; the generation prompt is
//    "<|im_start|>assistant\n". A default system prompt is a string literal of the template of the
//    form '<|im_start|>system\n' TEXT '<|im_end|>' (TEXT quote-free; "\n" as a Jinja escape or a
//    raw newline): SmolLM2's "You are a helpful AI assistant named SmolLM, trained by Hugging
//    Face", Qwen2.5-Instruct's "You are Qwen, created by Alibaba Cloud. ...". It is rendered
//    first, as a system message, when the first message is not a system message, as both
//    templates do. Tool calls (Qwen's `tools`) are not supported.
//  - kLlama3 (Llama 3 / 3-Instruct): "<|start_header_id|>", "<|end_header_id|>" and "<|eot_id|>".
//    The BOS text, then each message as "<|start_header_id|>" role "<|end_header_id|>\n\n"
//    trim(content) "<|eot_id|>" (trim: Jinja's, i.e. Python's str.strip(): leading and trailing
//    whitespace as str.isspace() defines it); the generation prompt is
//    "<|start_header_id|>assistant<|end_header_id|>\n\n". Llama 3.1+ templates (a "Cutting
//    Knowledge Date" system preamble, tools) are refused, not rendered differently.
// Anything else is kUnsupported naming the template's beginning; callers that have no usable
// template take a raw prompt instead (laya-run generate --prompt). Parity: the rendered text and
// SmolLM2's token ids equal transformers' render_jinja_template and llama.cpp's tokenizer on the
// recorded conversations (tests/runtime/test_chat_template.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace laya {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (any role renders the same way)
  std::string content;
};

enum class ChatFormat : uint8_t { kChatMl, kLlama3 };
const char* chat_format_name(ChatFormat f);  // "chatml", "llama3"

class ChatTemplate {
 public:
  // `jinja`: the template text; `bos_text`: the text of the BOS token (tokens[bos_id]), which a
  // Llama-3 template writes at the start. kNotFound when `jinja` is empty (the model has no
  // template), kUnsupported when it is not a recognized family.
  static Result<ChatTemplate> recognize(std::string_view jinja, std::string_view bos_text);

  ChatFormat format() const { return format_; }
  // ChatML's default system prompt ("" when the template has none).
  const std::string& default_system() const { return default_system_; }
  // The rendered text starts with the BOS text: do not add another BOS when tokenizing.
  bool renders_bos() const { return format_ == ChatFormat::kLlama3 && !bos_text_.empty(); }

  // kInvalidArgument when `messages` is empty (the templates index messages[0]).
  Result<std::string> render(std::span<const ChatMessage> messages,
                             bool add_generation_prompt) const;

 private:
  ChatFormat format_ = ChatFormat::kChatMl;
  std::string default_system_;
  std::string bos_text_;
};

}  // namespace laya
