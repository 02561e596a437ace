#include "runtime/decisions/sequence.h"

#include <algorithm>
#include <set>

#include "runtime/text/pystr.h"

namespace laya::decision {

namespace {

constexpr size_t kOptionTokens = 48;

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

std::string scrub_mask(std::string_view text, std::string_view mask_text) {
  if (mask_text.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t j = text.find(mask_text, i);
    if (j == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, j - i));
    out.push_back(' ');
    i = j + mask_text.size();
  }
  return out;
}

Result<StateTokens> encode_state(const TextEncoder& tok, const SpecialTokens& sp,
                                 const json::Value& state) {
  StateTokens st;
  st.keep_last = state.is_array();
  LAYA_RETURN_IF_ERROR(tok.encode(scrub_mask(serialize_state(state), sp.mask_text), &st.ids));
  return st;
}

Result<Head> build_head(const TextEncoder& tok, const SpecialTokens& sp, const Question& q,
                        int head_max_len) {
  std::vector<int32_t> header;
  LAYA_RETURN_IF_ERROR(tok.encode(
      std::string(qtype_name(q.type)) + " question: " + scrub_mask(q.instructions, sp.mask_text),
      &header));
  const size_t n = q.options.size();
  std::vector<std::vector<int32_t>> frags;
  frags.reserve(n);
  for (size_t s = 0; s < n; ++s) {
    const size_t i = q.option_order.empty() ? s : static_cast<size_t>(q.option_order[s]);
    std::vector<int32_t> f = {sp.mask};
    LAYA_RETURN_IF_ERROR(tok.encode(" " + scrub_mask(q.options[i], sp.mask_text), &f));
    if (f.size() > kOptionTokens + 1) f.resize(kOptionTokens + 1);
    frags.push_back(std::move(f));
  }
  auto budget = [&] {
    int64_t used = 0;
    for (const auto& f : frags) used += static_cast<int64_t>(f.size());
    return static_cast<int64_t>(head_max_len) - used;
  };
  Head h;
  int64_t opt_budget = budget();
  if (opt_budget < 16) {
    const int64_t per = std::max<int64_t>(
        4, floor_div(head_max_len - 16, std::max<int64_t>(1, static_cast<int64_t>(n))));
    h.tokens_per_option = static_cast<int>(per);
    for (auto& f : frags)
      if (static_cast<int64_t>(f.size()) > per) f.resize(static_cast<size_t>(per));
    opt_budget = budget();
  }
  const int64_t keep = std::max<int64_t>(8, opt_budget);
  if (static_cast<int64_t>(header.size()) > keep) header.resize(static_cast<size_t>(keep));
  h.ids.reserve(header.size() + 3);
  h.ids.push_back(sp.cls);
  h.ids.insert(h.ids.end(), header.begin(), header.end());
  h.ids.push_back(sp.sep);
  for (const auto& f : frags) {
    h.markers.push_back(static_cast<int32_t>(h.ids.size()));
    h.ids.insert(h.ids.end(), f.begin(), f.end());
  }
  h.ids.push_back(sp.sep);
  h.options = static_cast<int>(frags.size());
  h.options_distinct =
      static_cast<int>(std::set<std::vector<int32_t>>(frags.begin(), frags.end()).size());
  return h;
}

Result<Row> build_row(const Head& head, const Question& q, const StateTokens& state,
                      const SpecialTokens& sp, int max_len, int head_max_len) {
  Row r;
  r.qtype = q.type;
  r.options = head.options;
  r.options_distinct = head.options_distinct;
  r.tokens_per_option = head.tokens_per_option;
  const int64_t n_state = static_cast<int64_t>(state.ids.size());
  const int64_t room = std::max<int64_t>(0, max_len - static_cast<int64_t>(head.ids.size()) - 1);
  const int64_t used = std::min(room, n_state);
  const auto first = state.keep_last ? state.ids.end() - used : state.ids.begin();
  r.ids.reserve(std::min<size_t>(static_cast<size_t>(max_len), head.ids.size() + used + 1));
  r.ids = head.ids;
  r.ids.insert(r.ids.end(), first, first + used);
  r.ids.push_back(sp.sep);
  if (static_cast<int64_t>(r.ids.size()) > max_len) r.ids.resize(static_cast<size_t>(max_len));
  for (int32_t m : head.markers)
    if (m < max_len) r.markers.push_back(m);
  r.state_tokens = n_state;
  r.state_tokens_used = used;
  if (static_cast<int>(r.markers.size()) != head.options)
    return status_error(StatusCode::kRequestUnprocessable,
                        "question %s: only %zu of its %d option markers fit in max_len=%d with "
                        "head_max_len=%d spent on the question; lower head_max_len, raise max_len, "
                        "or use fewer options",
                        py::repr(std::string_view(q.id)).c_str(), r.markers.size(), head.options,
                        max_len, head_max_len);
  return r;
}

}  // namespace laya::decision
