#include "runtime/text/chat_template.h"

namespace laya {

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Python's str.isspace() code points.
bool py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// The code point of the UTF-8 sequence starting at s[i] and its length; {0xFFFFFFFF, 1} for a
// byte that does not start a well-formed sequence (never whitespace).
std::pair<uint32_t, size_t> decode_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return {c, 1};
  const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return {0xFFFFFFFFu, 1};
  uint32_t cp = c & (0x3Fu >> (n - 1));
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {0xFFFFFFFFu, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  return {cp, n};
}

// Jinja's `trim` filter: Python's str.strip().
std::string_view py_strip(std::string_view s) {
  size_t lo = 0;
  while (lo < s.size()) {
    const auto [cp, n] = decode_at(s, lo);
    if (!py_space(cp)) break;
    lo += n;
  }
  size_t hi = s.size();
  while (hi > lo) {
    size_t start = hi - 1;  // back to the lead byte of the last sequence
    while (start > lo && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80 && hi - start < 4) --start;
    const auto [cp, n] = decode_at(s, start);
    if (start + n != hi || !py_space(cp)) break;
    hi = start;
  }
  return s.substr(lo, hi - lo);
}

// ChatML's default system prompt: a literal '<|im_start|>system\n' TEXT '<|im_end|>' in the
// template, TEXT free of quotes and template tags. "" when there is none.
std::string chatml_default_system(std::string_view t) {
  static constexpr std::string_view kHead = "<|im_start|>system";
  static constexpr std::string_view kEnd = "<|im_end|>";
  for (size_t at = t.find(kHead); at != std::string_view::npos; at = t.find(kHead, at + 1)) {
    if (at == 0 || (t[at - 1] != '\'' && t[at - 1] != '"')) continue;
    size_t p = at + kHead.size();
    if (t.substr(p, 2) == "\\n")
      p += 2;
    else if (t.substr(p, 1) == "\n")
      p += 1;
    else
      continue;
    const size_t end = t.find(kEnd, p);
    if (end == std::string_view::npos) continue;
    const std::string_view raw = t.substr(p, end - p);
    if (raw.empty() || raw.find_first_of("'\"{}%") != std::string_view::npos) continue;
    std::string text;  // Jinja string escapes
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size()) {
        const char e = raw[++i];
        text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        text += raw[i];
      }
    }
    return text;
  }
  return {};
}

}  // namespace

const char* chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatMl:
      return "chatml";
    case ChatFormat::kLlama3:
      return "llama3";
  }
  return "?";
}

Result<ChatTemplate> ChatTemplate::recognize(std::string_view jinja, std::string_view bos_text) {
  if (jinja.empty())
    return Status(StatusCode::kNotFound,
                  "the model has no chat template (tokenizer.chat_template); pass a raw prompt");
  // The beginning of the template, on one line, for messages.
  std::string head(jinja.substr(0, 80));
  for (char& c : head)
    if (c == '\n' || c == '\r') c = ' ';
  if (jinja.size() > 80) head += "...";

  ChatTemplate t;
  const bool chatml = contains(jinja, "<|im_start|>") && contains(jinja, "<|im_end|>");
  const bool llama3 = contains(jinja, "<|start_header_id|>") &&
                      contains(jinja, "<|end_header_id|>") && contains(jinja, "<|eot_id|>");
  if (chatml && !llama3) {
    t.format_ = ChatFormat::kChatMl;
    t.default_system_ = chatml_default_system(jinja);
    return t;
  }
  if (llama3 && !chatml) {
    if (contains(jinja, "Cutting Knowledge Date"))
      return status_error(StatusCode::kUnsupported,
                          "Llama 3.1+ chat template (date preamble, tools) is not supported: '%s'; "
                          "pass a raw prompt",
                          head.c_str());
    t.format_ = ChatFormat::kLlama3;
    t.bos_text_ = std::string(bos_text);
    return t;
  }
  return status_error(StatusCode::kUnsupported,
                      "unknown chat template (neither ChatML nor Llama-3): '%s'; pass a raw prompt",
                      head.c_str());
}

Result<std::string> ChatTemplate::render(std::span<const ChatMessage> messages,
                                         bool add_generation_prompt) const {
  if (messages.empty()) return Status(StatusCode::kInvalidArgument, "chat: no messages");
  std::string out;
  switch (format_) {
    case ChatFormat::kChatMl:
      if (!default_system_.empty() && messages[0].role != "system")
        out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
      for (const ChatMessage& m : messages)
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatFormat::kLlama3:
      out += bos_text_;
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += py_strip(m.content);
        out += "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
  }
  return out;
}

}  // namespace laya
