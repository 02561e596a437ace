// The normalizer chain (HF normalizers), string to string.
#include "runtime/text/tokenizer/tokenizer_impl.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

using unicode::append_utf8;
using unicode::next_cp;

void bert_clean(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size();) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b >= 0x20 && b < 0x7F) {  // printable ASCII: kept as it is
      out->push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t c = next_cp(in, i);
    if (c == 0 || c == 0xFFFD || unicode::is_bert_control(c)) continue;
    if (unicode::is_white_space(c)) {
      out->push_back(' ');
    } else {
      out->append(in.data() + start, i - start);
    }
  }
}

void bert_chinese(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size();) {
    if (static_cast<unsigned char>(in[i]) < 0x80) {  // ASCII: never a CJK ideograph
      out->push_back(in[i++]);
      continue;
    }
    const size_t start = i;
    const char32_t c = next_cp(in, i);
    if (unicode::is_bert_chinese(c)) {
      out->push_back(' ');
      out->append(in.data() + start, i - start);
      out->push_back(' ');
    } else {
      out->append(in.data() + start, i - start);
    }
  }
}

template <class Keep>
void filter_cps(std::string_view in, std::string* out, Keep keep) {
  for (size_t i = 0; i < in.size();) {
    const size_t start = i;
    const char32_t c = next_cp(in, i);
    if (keep(c)) out->append(in.data() + start, i - start);
  }
}

void nmt(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size();) {
    const size_t start = i;
    const char32_t c = next_cp(in, i);
    if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
        c == 0x8F || c == 0x9F) {
      continue;
    }
    const bool to_space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
                          (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 ||
                          c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
    if (to_space) {
      out->push_back(' ');
    } else {
      out->append(in.data() + start, i - start);
    }
  }
}

void strip(std::string_view in, bool left, bool right, std::string* out) {
  size_t b = 0, e = in.size();
  if (left) {
    while (b < e) {
      size_t i = b;
      if (!unicode::is_white_space(next_cp(in, i))) break;
      b = i;
    }
  }
  if (right) {
    while (e > b) {
      size_t s = e - 1;
      while (s > b && (static_cast<unsigned char>(in[s]) & 0xC0) == 0x80) --s;
      size_t i = s;
      if (!unicode::is_white_space(next_cp(in, i))) break;
      e = s;
    }
  }
  out->append(in.data() + b, e - b);
}

}  // namespace

Status TokenizerImpl::normalize(std::string_view in, ThreadState& ts, std::string* out) const {
  std::string* cur = &ts.tmp;
  std::string* next = &ts.tmp2;
  cur->assign(in.data(), in.size());
  for (const NormStep& step : normalizers) {
    const NormalizerSpec& n = step.spec;
    next->clear();
    const std::string_view s = *cur;
    switch (n.kind) {
      case NormalizerKind::kNfc:
        LAYA_RETURN_IF_ERROR(unicode::normalize(s, unicode::NormalForm::kNfc, next));
        break;
      case NormalizerKind::kNfd:
        LAYA_RETURN_IF_ERROR(unicode::normalize(s, unicode::NormalForm::kNfd, next));
        break;
      case NormalizerKind::kNfkc:
        LAYA_RETURN_IF_ERROR(unicode::normalize(s, unicode::NormalForm::kNfkc, next));
        break;
      case NormalizerKind::kNfkd:
        LAYA_RETURN_IF_ERROR(unicode::normalize(s, unicode::NormalForm::kNfkd, next));
        break;
      case NormalizerKind::kLowercase:
        unicode::lowercase(s, next);
        break;
      case NormalizerKind::kStrip:
        strip(s, n.strip_left, n.strip_right, next);
        break;
      case NormalizerKind::kStripAccents:
        filter_cps(s, next, [](char32_t c) { return !unicode::is_mark(c); });
        break;
      case NormalizerKind::kReplace: {
        size_t prev = 0;
        LAYA_RETURN_IF_ERROR(step.regex.for_each_match(s, ts.regex, [&](size_t b, size_t e) {
          next->append(s.data() + prev, b - prev);
          next->append(n.content);
          prev = e;
        }));
        next->append(s.data() + prev, s.size() - prev);
        break;
      }
      case NormalizerKind::kPrepend:
        if (!s.empty()) next->append(n.content);
        next->append(s);
        break;
      case NormalizerKind::kBert: {
        std::string_view t = s;
        std::string& a = ts.bert_a;
        std::string& b = ts.bert_b;
        a.clear();
        if (n.clean_text) {
          bert_clean(t, &a);
          t = a;
        }
        if (n.handle_chinese_chars) {
          b.clear();
          bert_chinese(t, &b);
          a.swap(b);
          t = a;
        }
        if (n.strip_accents) {
          b.clear();
          LAYA_RETURN_IF_ERROR(unicode::normalize(t, unicode::NormalForm::kNfd, &b));
          a.clear();
          filter_cps(b, &a, [](char32_t c) { return !unicode::is_nonspacing_mark(c); });
          t = a;
        }
        if (n.lowercase) {
          unicode::lowercase(t, next);
        } else {
          next->append(t);
        }
        break;
      }
      case NormalizerKind::kNmt:
        nmt(s, next);
        break;
      case NormalizerKind::kByteLevel:
        for (char ch : s) append_utf8(*next, byte_to_char(static_cast<uint8_t>(ch)));
        break;
    }
    std::swap(cur, next);
  }
  out->swap(*cur);
  return Status::ok();
}

}  // namespace laya::tok
