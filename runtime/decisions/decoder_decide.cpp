#include "runtime/decisions/decoder_decide.h"

#include "ir/arena.h"

#include <algorithm>
#include <cmath>

#include "runtime/decisions/constrained_sampling.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/text/pystr.h"

namespace laya::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using json::Value;

Status invalid(const std::string& m) {
  return Status(StatusCode::kRequestInvalid, m);
}
Status unprocessable(const std::string& m) {
  return Status(StatusCode::kRequestUnprocessable, m);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// DecoderDecideOptions::clock_ms, or the steady clock's milliseconds since `origin`.
double decide_clock_ms(const DecoderDecideOptions& opts, Clock::time_point origin) {
  return opts.clock_ms != nullptr ? opts.clock_ms(opts.clock_ctx) : ms_since(origin);
}

Value num4(double v) {
  return Value::number(py::round(v, 4));
}
// Timings: milliseconds and tokens per second to 0.1.
Value num1(double v) {
  return Value::number(py::round(v, 1));
}

// The chat template's text around one user message (and the system message when given): the
// user content goes between head and tail.
Status render_around(const ChatTemplate& chat, const std::optional<std::string>& system,
                     std::string* head, std::string* tail) {
  static constexpr char kSentinel[] = "\x01\x02\x01";
  std::vector<ChatMessage> messages;
  if (system) messages.push_back({"system", *system});
  messages.push_back({"user", kSentinel});
  LAYA_ASSIGN_OR_RETURN(std::string text, chat.render(messages, true));
  const size_t at = text.find(kSentinel);
  if (at == std::string::npos || text.find(kSentinel, at + 1) != std::string::npos)
    return Status(StatusCode::kInternal, "the chat template did not render the user message once");
  *head = text.substr(0, at);
  *tail = text.substr(at + sizeof(kSentinel) - 1);
  return Status::ok();
}

Status encode_parts(const DecoderText& t, const std::string& shared, const std::string& rest,
                    std::vector<int32_t>* shared_ids, std::vector<int32_t>* rest_ids) {
  tok::EncodeOptions first;
  first.add_special_tokens = t.add_bos;
  LAYA_RETURN_IF_ERROR(t.tokenizer->encode(shared, first, shared_ids));
  if (rest_ids != nullptr) LAYA_RETURN_IF_ERROR(t.tokenizer->encode(rest, {}, rest_ids));
  return Status::ok();
}

std::string state_text(const json::Value& state) {
  return "State:\n" + decision::serialize_state(state);
}

constexpr const char* kSchemaInstruction =
    "Decide from the device state below. Answer with one JSON object that follows this JSON "
    "schema:\n";

std::string question_text(const decision::Question& q) {
  std::string s = "\n\nQuestion: " + q.instructions + "\n";
  const size_t k = q.options.size();
  for (size_t slot = 0; slot < k; ++slot) {
    const size_t o = q.option_order.size() == k ? static_cast<size_t>(q.option_order[slot]) : slot;
    s += static_cast<char>('A' + slot);
    s += ") " + q.options[o] + "\n";
  }
  s += "Answer with the letter of one option (";
  for (size_t slot = 0; slot < k; ++slot) {
    if (slot) s += ", ";
    s += static_cast<char>('A' + slot);
  }
  s += ").";
  return s;
}

// The item indices of the arrays enclosing the end of a canonical JSON text, outer first: fed the
// text once, byte by byte, as it is generated (strings skipped).
class ItemIndices {
 public:
  void feed(std::string_view bytes) {
    for (const char c : bytes) {
      if (in_string_) {
        if (escape_)
          escape_ = false;
        else if (c == '\\')
          escape_ = true;
        else if (c == '"')
          in_string_ = false;
        continue;
      }
      switch (c) {
        case '"':
          in_string_ = true;
          break;
        case '{':
          frames_.push_back(-1);
          break;
        case '[':
          frames_.push_back(0);
          break;
        case '}':
        case ']':
          if (!frames_.empty()) frames_.pop_back();
          break;
        case ',':
          if (!frames_.empty() && frames_.back() >= 0) ++frames_.back();
          break;
        default:
          break;
      }
    }
  }
  // The indices a slot's kAnyItem steps take: for every index step of its path the next
  // enclosing array's item index, kept where the step is kAnyItem.
  std::vector<int64_t> any_items(const grammar::SlotPath& path) const {
    std::vector<int64_t> out;
    size_t depth = 0;
    for (const grammar::SlotStep& st : path) {
      if (st.index == grammar::kKey) continue;
      while (depth < frames_.size() && frames_[depth] < 0) ++depth;  // objects
      const int64_t at = depth < frames_.size() ? frames_[depth] : 0;
      ++depth;
      if (st.index == grammar::kAnyItem) out.push_back(at);
    }
    return out;
  }

 private:
  std::vector<int64_t> frames_;  // per open container: -1 an object, else the array's item index
  bool in_string_ = false, escape_ = false;
};

// Log-softmax of `logits[id]` over the ids allowed by `mask` (bit id % 64 of word id / 64), in
// double.
double masked_log_prob(const float* logits, const uint64_t* mask, int32_t vocab, int32_t id) {
  double m = -INFINITY;
  for (int32_t w = 0; w * 64 < vocab; ++w)
    for (uint64_t bits = mask[w]; bits; bits &= bits - 1) {
      const int32_t t = w * 64 + __builtin_ctzll(bits);
      if (t < vocab && std::isfinite(logits[t])) m = std::max(m, static_cast<double>(logits[t]));
    }
  if (!std::isfinite(m)) return -INFINITY;
  double s = 0;
  for (int32_t w = 0; w * 64 < vocab; ++w)
    for (uint64_t bits = mask[w]; bits; bits &= bits - 1) {
      const int32_t t = w * 64 + __builtin_ctzll(bits);
      if (t < vocab && std::isfinite(logits[t])) s += std::exp(static_cast<double>(logits[t]) - m);
    }
  return static_cast<double>(logits[id]) - m - std::log(s);
}

double min_confidence_for(const decision::MinConfidence& mc, const std::string& bucket) {
  if (!mc.present) return -1;
  if (!mc.is_map) return mc.value;
  double t = 0;
  bool found = false;
  for (const auto& [k, v] : mc.buckets)
    if (k == bucket) {
      t = v;
      found = true;
    }
  if (!found)
    for (const auto& [k, v] : mc.buckets)
      if (k == "default") t = v;
  return t;
}

Result<std::vector<Value>> read_states(const Value& body) {
  std::vector<Value> states;
  const Value* state = body.find("state");
  const Value* list = body.find("states");
  if (state && list) return invalid("request body must carry either 'state' or 'states', not both");
  if (list) {
    if (!list->is_array() || list->items().empty())
      return invalid("'states' must be a non-empty list");
    if (list->items().size() > static_cast<size_t>(decision::kMaxBatchStates))
      return Status(StatusCode::kRequestTooLarge, "too many states (at most 64)");
    for (const Value& s : list->items()) {
      if (s.is_null()) return invalid("a state must not be null");
      states.push_back(s);
    }
    return states;
  }
  if (!state || state->is_null()) return invalid("request body needs a 'state' (or 'states')");
  states.push_back(*state);
  return states;
}

}  // namespace

Result<DecoderRequest> parse_decoder_request(std::string_view body_text) {
  json::ParseOptions po;
  po.max_bytes = decision::kMaxBodyBytes;
  Result<Value> parsed = json::parse(body_text, po, "request body");
  if (!parsed.is_ok())
    return invalid(std::string("request body must be valid JSON (") + parsed.status().message() +
                   ")");
  const Value& body = *parsed;
  if (!body.is_object()) return invalid("request body must be a JSON object");
  DecoderRequest req;
  if (const Value* s = body.find("system"); s && !s->is_null()) {
    if (!s->is_string()) return unprocessable("'system' must be a string");
    req.system = s->as_string();
  }
  const Value* schema = body.find("schema");
  if (schema && !schema->is_null() && !body.find("questions")) {
    req.schema = true;
    LAYA_ASSIGN_OR_RETURN(req.states, read_states(body));
    req.batch = body.find("states") != nullptr;
    if (!schema->is_object()) return unprocessable("'schema' must be a JSON object");
    Result<grammar::Schema> parsed_schema = grammar::schema_parse(*schema);
    if (!parsed_schema.is_ok())
      return unprocessable(std::string("schema: ") + parsed_schema.status().message());
    DecoderSchemaRequest& sr = req.schema_request;
    sr.schema = *schema;
    auto check = [&](const Value& v, const char* what) -> Status {
      const Status st = grammar::schema_validate(*parsed_schema, v);
      if (!st.is_ok())
        return unprocessable(std::string(what) +
                             " does not validate against the schema: " + st.message());
      return Status::ok();
    };
    if (const Value* fb = body.find("fallback"); fb && !fb->is_null()) {
      LAYA_RETURN_IF_ERROR(check(*fb, "'fallback'"));
      sr.fallback = *fb;
    } else if (const Value* def = schema->find("default")) {
      LAYA_RETURN_IF_ERROR(check(*def, "the schema's 'default'"));
      sr.fallback = *def;
    }
    auto integer = [&](const char* key, int64_t lo, int64_t hi) -> Result<std::optional<int64_t>> {
      const Value* v = body.find(key);
      if (!v || v->is_null()) return std::optional<int64_t>();
      const std::optional<int64_t> x = v->is_integer() ? v->as_int64() : std::nullopt;
      if (!x || *x < lo || *x > hi)
        return unprocessable(std::string("'") + key + "' must be an integer in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                             json::dump(*v));
      return x;
    };
    LAYA_ASSIGN_OR_RETURN(std::optional<int64_t> mt, integer("max_tokens", 1, 100000));
    if (mt) sr.max_tokens = *mt;
    LAYA_ASSIGN_OR_RETURN(sr.deadline_ms, integer("deadline_ms", 1, 3600000));
    if (const Value* mc = body.find("min_confidence"); mc && !mc->is_null()) {
      LAYA_ASSIGN_OR_RETURN(req.min_confidence, decision::check_min_confidence(*mc));
    }
    return req;
  }
  LAYA_ASSIGN_OR_RETURN(req.questions, decision::parse_request(body));
  if (req.questions.shortlist_k)
    return unprocessable("'shortlist' needs an encoder model (it ranks options by embedding)");
  for (const decision::Question& q : req.questions.questions)
    if (q.options.size() > static_cast<size_t>(kMaxDecoderOptions))
      return unprocessable("question '" + q.id + "' has " + std::to_string(q.options.size()) +
                           " options; a decoder answers at most 26 (labels A to Z)");
  req.states = req.questions.states;
  req.batch = req.questions.batch;
  req.min_confidence = req.questions.min_confidence;
  return req;
}

Result<QuestionsPrompt> questions_prompt(const DecoderText& text, const json::Value& state,
                                         const std::vector<decision::Question>& questions,
                                         const std::optional<std::string>& system) {
  std::string head, tail;
  LAYA_RETURN_IF_ERROR(render_around(text.chat, system, &head, &tail));
  QuestionsPrompt p;
  LAYA_RETURN_IF_ERROR(encode_parts(text, head + state_text(state), "", &p.shared, nullptr));
  for (const decision::Question& q : questions) {
    std::vector<int32_t> ids;
    LAYA_RETURN_IF_ERROR(text.tokenizer->encode(question_text(q) + tail, {}, &ids));
    p.suffixes.push_back(std::move(ids));
  }
  return p;
}

Result<DecoderPrompt> schema_prompt(const DecoderText& text, const json::Value& state,
                                    const json::Value& schema,
                                    const std::optional<std::string>& system) {
  std::string head, tail;
  LAYA_RETURN_IF_ERROR(render_around(text.chat, system, &head, &tail));
  DecoderPrompt p;
  std::vector<int32_t> rest;
  LAYA_RETURN_IF_ERROR(encode_parts(text, head + kSchemaInstruction + json::dump(schema),
                                    "\n\n" + state_text(state) + tail, &p.ids, &rest));
  p.shared = p.ids.size();
  p.ids.insert(p.ids.end(), rest.begin(), rest.end());
  return p;
}

Result<DecoderCells> decoder_request_cells(const DecoderText& text, const DecoderRequest& req) {
  DecoderCells c;
  for (const Value& state : req.states) {
    if (req.schema) {
      LAYA_ASSIGN_OR_RETURN(DecoderPrompt p,
                            schema_prompt(text, state, req.schema_request.schema, req.system));
      c.working =
          std::max(c.working, static_cast<int64_t>(p.ids.size()) + req.schema_request.max_tokens);
      c.stored = std::max(c.stored, static_cast<int64_t>(p.shared));
    } else {
      LAYA_ASSIGN_OR_RETURN(QuestionsPrompt p,
                            questions_prompt(text, state, req.questions.questions, req.system));
      size_t longest = 0;
      for (const auto& s : p.suffixes) longest = std::max(longest, s.size());
      c.working = std::max(c.working, static_cast<int64_t>(p.shared.size() + longest));
      c.stored = std::max(c.stored, static_cast<int64_t>(p.shared.size()));
    }
  }
  return c;
}

Result<std::vector<int32_t>> option_label_ids(const tok::Tokenizer& tok, size_t k) {
  if (k > static_cast<size_t>(kMaxDecoderOptions))
    return unprocessable(std::to_string(k) +
                         " options; a decoder answers at most 26 (labels A to Z)");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < k; ++i) {
    const std::string label(1, static_cast<char>('A' + i));
    std::vector<int32_t> t;
    LAYA_RETURN_IF_ERROR(tok.encode(label, {}, &t));
    if (t.size() != 1)
      return Status(StatusCode::kUnsupported, "the option label '" + label + "' is " +
                                                  std::to_string(t.size()) +
                                                  " tokens in this vocabulary, not one");
    ids.push_back(t[0]);
  }
  return ids;
}

Result<std::shared_ptr<const grammar::TokenVocab>> decoder_token_vocab(
    const tok::Tokenizer& tok, int32_t vocab, std::span<const int32_t> stop_ids) {
  std::vector<std::string> pieces(static_cast<size_t>(vocab));
  for (int32_t id = 0; id < vocab && id < tok.vocab_size(); ++id) {
    std::string piece;
    if (tok.token_to_piece(id, false, &piece).is_ok())
      pieces[static_cast<size_t>(id)] = std::move(piece);
  }
  std::vector<int32_t> stops;
  for (int32_t id : stop_ids)
    if (id >= 0 && id < vocab) stops.push_back(id);
  return grammar::TokenVocab::create(std::move(pieces), std::move(stops));
}

Result<std::shared_ptr<const grammar::TokenAutomaton>> AutomatonCache::get(
    const json::Value& schema) const {
  const std::string key = json::dump(schema);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = automata_.find(key); it != automata_.end()) return it->second;
  // Kept past the call that compiles it: on the heap, whatever arena the caller runs in.
  mem::Scope heap(nullptr);
  LAYA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::TokenAutomaton> a,
                        grammar::TokenAutomaton::compile(schema, vocab_));
  automata_.emplace(key, a);
  return a;
}

Result<std::unique_ptr<DecoderDecider>> DecoderDecider::create(
    DecoderRunner& runner, KvCache& cache, PrefixCache* prefix_cache, DecoderText text,
    decision::Temperatures temps, const AutomatonCache* automata, int32_t seq) {
  if (text.tokenizer == nullptr)
    return Status(StatusCode::kInvalidArgument, "a decoder decision needs the model's tokenizer");
  if (automata == nullptr)
    return Status(StatusCode::kInvalidArgument, "a decoder decision needs an automaton cache");
  if (automata->vocab()->size() != runner.vocab())
    return status_error(StatusCode::kInvalidArgument,
                        "the grammar vocabulary has %d ids, the logits %lld",
                        automata->vocab()->size(), static_cast<long long>(runner.vocab()));
  if (seq < 0 || seq >= cache.max_seqs())
    return Status(StatusCode::kInvalidArgument, "the working sequence is outside the KV cache");
  if (prefix_cache != nullptr && &prefix_cache->kv_cache() != &cache)
    return Status(StatusCode::kInvalidArgument, "the prefix cache is over another KV cache");
  std::unique_ptr<DecoderDecider> d(new DecoderDecider());
  d->runner_ = &runner;
  d->cache_ = &cache;
  d->prefix_ = prefix_cache;
  d->automata_ = automata;
  d->temps_ = std::move(temps);
  d->seq_ = seq;
  text.stop_ids = automata->vocab()->stop_ids();
  d->text_ = std::move(text);
  return d;
}

Result<std::vector<int32_t>> DecoderDecider::tokenize_bytes(std::string_view bytes) const {
  // A generated token may end inside a UTF-8 character, and a forced run may stop inside one:
  // those bytes go as single-byte tokens, the whole characters between through the tokenizer.
  auto continuation = [](char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; };
  size_t lead = 0;
  while (lead < bytes.size() && continuation(bytes[lead])) ++lead;
  size_t end = bytes.size();
  for (size_t back = 0; back < 4 && back < end - lead; ++back) {
    const uint8_t c = static_cast<uint8_t>(bytes[end - 1 - back]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t need = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    if (back + 1 < need) end = end - 1 - back;
    break;
  }
  std::vector<int32_t> ids;
  auto single = [&](size_t from, size_t to) -> Status {
    for (size_t i = from; i < to; ++i) {
      const int32_t t = vocab().byte_token(static_cast<uint8_t>(bytes[i]));
      if (t < 0)
        return Status(StatusCode::kInternal, "a byte of forced text has no single-byte token");
      ids.push_back(t);
    }
    return Status::ok();
  };
  LAYA_RETURN_IF_ERROR(single(0, lead));
  if (end > lead)
    LAYA_RETURN_IF_ERROR(text_.tokenizer->encode(bytes.substr(lead, end - lead), {}, &ids));
  LAYA_RETURN_IF_ERROR(single(std::max(lead, end), bytes.size()));
  return ids;
}

template <class F>
Status DecoderDecider::append(std::span<const int32_t> ids, F&& row) {
  const size_t chunk = static_cast<size_t>(runner_->chunk());
  const size_t V = static_cast<size_t>(runner_->vocab());
  for (size_t at = 0; at < ids.size(); at += chunk) {
    const size_t n = std::min(chunk, ids.size() - at);
    LAYA_RETURN_IF_ERROR(runner_->step(seq_, ids.subspan(at, n)));
    for (size_t i = 0; i < n; ++i) row(at + i, runner_->logits().data() + i * V);
  }
  return Status::ok();
}

Result<int64_t> DecoderDecider::prefill_prompt(std::span<const int32_t> ids,
                                               std::span<const int32_t> store) {
  LAYA_RETURN_IF_ERROR(cache_->remove(seq_));
  int64_t hit = 0;
  if (prefix_ != nullptr) {
    LAYA_ASSIGN_OR_RETURN(hit, prefix_->restore(ids, seq_));
  }
  LAYA_RETURN_IF_ERROR(runner_->prefill(seq_, ids.subspan(static_cast<size_t>(hit))));
  if (prefix_ != nullptr) LAYA_RETURN_IF_ERROR(prefix_->store(store, seq_));
  return hit;
}

Result<QuestionScores> DecoderDecider::score_questions(
    const json::Value& state, const std::vector<decision::Question>& questions,
    const std::optional<std::string>& system) {
  QuestionScores out;
  LAYA_ASSIGN_OR_RETURN(out.prompt, questions_prompt(text_, state, questions, system));
  std::vector<std::vector<int32_t>> labels;
  for (const decision::Question& q : questions) {
    LAYA_ASSIGN_OR_RETURN(std::vector<int32_t> l,
                          option_label_ids(*text_.tokenizer, q.options.size()));
    for (int32_t id : l)
      if (id >= runner_->vocab())
        return Status(StatusCode::kUnsupported, "an option label token is outside the logits");
    labels.push_back(std::move(l));
  }
  const std::vector<int32_t>& shared = out.prompt.shared;
  // The shared part is prefilled once (after what the prefix cache holds); each suffix is
  // appended, read at its last position and removed.
  LAYA_ASSIGN_OR_RETURN(out.prefix_hit_tokens, prefill_prompt(shared, shared));
  out.prefill_tokens = static_cast<int64_t>(shared.size()) - out.prefix_hit_tokens;
  const int64_t prefix_len = cache_->seq_length(seq_);
  for (size_t j = 0; j < questions.size(); ++j) {
    const std::vector<int32_t>& suffix = out.prompt.suffixes[j];
    std::vector<float> scores(labels[j].size());
    if (suffix.empty())
      return Status(StatusCode::kInternal, "a question's prompt suffix has no tokens");
    LAYA_RETURN_IF_ERROR(runner_->prefill(seq_, suffix));
    const std::span<const float> last = runner_->last_logits();
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = last[static_cast<size_t>(labels[j][i])];
    out.prefill_tokens += static_cast<int64_t>(suffix.size());
    LAYA_RETURN_IF_ERROR(cache_->remove(seq_, prefix_len));
    out.scores.push_back(std::move(scores));
  }
  LAYA_RETURN_IF_ERROR(cache_->remove(seq_));
  return out;
}

Status DecoderDecider::answer_state(const json::Value& state, const DecoderRequest& req,
                                    decision::StateResult* out) {
  const std::vector<decision::Question>& qs = req.questions.questions;
  if (qs.empty()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(QuestionScores s, score_questions(state, qs, req.system));
  for (size_t j = 0; j < qs.size(); ++j) {
    decision::Answer a =
        decision::compute_answer(qs[j], s.scores[j].size(), s.scores[j].data(), nullptr, temps_);
    decision::gate_answer(req.min_confidence, &a);
    out->answers.push_back(std::move(a));
    out->usage.input_tokens +=
        static_cast<int64_t>(s.prompt.shared.size() + s.prompt.suffixes[j].size());
  }
  out->usage.prefill_tokens = s.prefill_tokens;
  out->usage.prefix_hit_tokens = s.prefix_hit_tokens;
  return Status::ok();
}

json::Value decoder_answers_json(const std::vector<decision::Question>& questions,
                                 const decision::StateResult& r) {
  if (questions.empty()) return decision::empty_result();
  Value usage = Value::object();
  usage.set("input_tokens", Value::integer(r.usage.input_tokens));
  usage.set("prefill_tokens", Value::integer(r.usage.prefill_tokens));
  usage.set("prefix_hit_tokens", Value::integer(r.usage.prefix_hit_tokens));
  usage.set("output_tokens", Value::integer(0));
  return decision::make_result(questions, r.answers, std::move(usage));
}

Status DecoderDecider::decide(const DecoderRequest& req, const DecoderDecideOptions& opts,
                              DecoderOutput* out) {
  *out = DecoderOutput();
  out->schema = req.schema;
  out->questions.questions = req.questions.questions;
  std::vector<Value> results;
  for (const Value& state : req.states) {
    Status st;
    if (req.schema) {
      SchemaDecision d;
      st = decide_schema(state, req, opts, &d);
      if (st.is_ok()) {
        results.push_back(schema_decision_json(d));
        out->decisions.push_back(std::move(d));
      }
    } else {
      decision::StateResult r;
      st = answer_state(state, req, &r);
      if (st.is_ok()) {
        results.push_back(decoder_answers_json(req.questions.questions, r));
        out->questions.states.push_back(std::move(r));
      }
    }
    if (!st.is_ok()) {
      (void)cache_->remove(seq_);
      *out = DecoderOutput();
      return st;
    }
  }
  if (req.batch)
    out->json = Value::array(std::move(results));
  else if (!results.empty())
    out->json = std::move(results[0]);
  return Status::ok();
}

json::Value schema_decision_json(const SchemaDecision& d) {
  Value fields = Value::object();
  for (const FieldResult& f : d.fields) {
    Value probs = Value::object();
    for (size_t o = 0; o < f.options.size(); ++o)
      probs.members().push_back({f.options[o], num4(f.p[o])});
    Value field = Value::object();
    field.set("probabilities", std::move(probs));
    field.set("confidence", num4(f.confidence));
    if (f.needs_review) field.set("needs_review", Value::boolean(true));
    fields.set(f.path, std::move(field));
  }
  Value usage = Value::object();
  usage.set("input_tokens", Value::integer(d.usage.input_tokens));
  usage.set("prefix_hit_tokens", Value::integer(d.usage.prefix_hit_tokens));
  usage.set("output_tokens", Value::integer(d.usage.output_tokens));
  Value timings = Value::object();
  timings.set("load_ms", num1(d.timings.load_ms));
  timings.set("ttft_ms", num1(d.timings.ttft_ms));
  timings.set("prefill_ms", num1(d.timings.prefill_ms));
  timings.set("decode_tokens_per_s", num1(d.timings.decode_tokens_per_s));
  Value pc = Value::object();
  pc.set("hits", Value::integer(d.timings.prefix_hits));
  pc.set("misses", Value::integer(d.timings.prefix_misses));
  pc.set("hit_tokens", Value::integer(d.timings.prefix_hit_tokens));
  timings.set("prefix_cache", std::move(pc));
  Value out = Value::object();
  out.set("decision", d.decision);
  out.set("fields", std::move(fields));
  out.set("fallback", Value::boolean(d.fallback));
  out.set("usage", std::move(usage));
  out.set("timings", std::move(timings));
  return out;
}

// One schema decision's walk through the automaton: the matcher, the text and tokens so far, the
// budget and the fields, with one method per kind of step (forced text, one constrained token, a
// scored slot). Every byte committed is fed once to the item counter that fills a slot's path.
class DecoderDecider::SchemaWalk {
 public:
  // `t0`: now() at the decision's start (the deadline and the timings count from it).
  SchemaWalk(DecoderDecider& d, const grammar::TokenAutomaton& ta, const DecoderRequest& req,
             Sampler& sampler, const DecoderDecideOptions& opts, Clock::time_point origin,
             double t0)
      : d_(d),
        ta_(ta),
        req_(req),
        sr_(req.schema_request),
        sampler_(sampler),
        opts_(opts),
        origin_(origin),
        t0_(t0),
        m_(&ta) {}

  // Runs until the document is complete or the budget is spent (overrun()).
  Status run(SchemaDecision* out) {
    logits_ = d_.runner_->last_logits().data();
    while (!m_.complete()) {
      if (opts_.abort != nullptr && opts_.abort(opts_.abort_user))
        return Status(StatusCode::kAborted, "the abort callback stopped the decision");
      const int32_t s = m_.state();
      const int32_t slot = ta_.chars().entry_slot(s);
      bool stop = false;
      if (slot < 0 && ta_.chars().forced_byte(s) >= 0) {
        LAYA_RETURN_IF_ERROR(forced(&stop));
      } else if (slot >= 0 && !ta_.chars().entry_mixed(s)) {
        LAYA_RETURN_IF_ERROR(score_slot(slot, out, &stop));
      } else {
        LAYA_RETURN_IF_ERROR(token(slot, out, &stop));
      }
      if (stop) break;
    }
    return Status::ok();
  }

  bool overrun() const { return overrun_ != StatusCode::kOk; }
  Status overrun_status() const {
    return Status(overrun_,
                  overrun_why_ + ", and the request has no fallback (nor the schema a default)");
  }
  const std::string& text() const { return text_; }
  size_t tokens() const { return out_ids_.size(); }
  double first_token_ms() const { return first_token_ms_; }

 private:
  double elapsed() const { return decide_clock_ms(opts_, origin_) - t0_; }

  // Whether `more` tokens still fit max_tokens and the deadline; records the overrun otherwise.
  bool budget(size_t more) {
    if (out_ids_.size() + more > static_cast<size_t>(sr_.max_tokens)) {
      overrun_ = StatusCode::kLimitExceeded;
      overrun_why_ =
          "the decision needs more than max_tokens " + std::to_string(sr_.max_tokens) + " tokens";
      return false;
    }
    if (sr_.deadline_ms && elapsed() > static_cast<double>(*sr_.deadline_ms)) {
      overrun_ = StatusCode::kDeadlineExceeded;
      overrun_why_ = "the decision passed deadline_ms " + std::to_string(*sr_.deadline_ms);
      return false;
    }
    return true;
  }

  // Appends tokens whose bytes are `bytes` (already accepted by the matcher).
  Status commit(std::span<const int32_t> ids, std::string_view bytes) {
    LAYA_RETURN_IF_ERROR(d_.runner_->prefill(d_.seq_, ids));
    logits_ = d_.runner_->last_logits().data();
    out_ids_.insert(out_ids_.end(), ids.begin(), ids.end());
    text_.append(bytes);
    if (opts_.on_token != nullptr) {
      if (ids.size() == 1) {
        opts_.on_token(opts_.on_token_user, ids[0], bytes);
      } else {
        for (int32_t id : ids) opts_.on_token(opts_.on_token_user, id, d_.vocab().piece(id));
      }
    }
    items_.feed(bytes);
    if (first_token_ms_ < 0) first_token_ms_ = elapsed();
    return Status::ok();
  }

  // Forced text up to the next choice (or slot entry): tokenized and appended in one step.
  Status forced(bool* stop) {
    const grammar::CharAutomaton& chars = ta_.chars();
    std::string run;
    int32_t f = m_.state();
    while (chars.entry_slot(f) < 0 && chars.forced_byte(f) >= 0) {
      run.push_back(static_cast<char>(chars.forced_byte(f)));
      f = chars.next(f, static_cast<uint8_t>(run.back()));
    }
    LAYA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, d_.tokenize_bytes(run));
    const int32_t V = static_cast<int32_t>(d_.runner_->vocab());
    for (int32_t id : ids)
      if (id < 0 || id >= V || !ta_.allowed(m_.state(), id) || !m_.accept(id).is_ok())
        return Status(StatusCode::kInternal,
                      "the forced text '" + run + "' does not tokenize within the grammar");
    if (!budget(ids.size())) {
      *stop = true;
      return Status::ok();
    }
    return commit(ids, run);
  }

  // One constrained token. At a mixed entry (slot >= 0) a token that starts an option text means
  // "an item comes": the slot is scored instead.
  Status token(int32_t slot, SchemaDecision* out, bool* stop) {
    grammar::GrammarMatcher trial = m_;
    LAYA_ASSIGN_OR_RETURN(int32_t id, sample_constrained(sampler_, trial, logits_));
    const grammar::TokenVocab& vocab = d_.vocab();
    if (slot >= 0 && !vocab.is_stop(id)) {
      const std::string_view piece = vocab.piece(id);
      for (const std::string& o : ta_.chars().slots()[static_cast<size_t>(slot)].texts)
        if (!piece.empty() && !o.empty() && o[0] == piece[0]) return score_slot(slot, out, stop);
    }
    m_ = trial;
    if (vocab.is_stop(id) || !budget(1)) {  // the document is complete, or the budget is spent
      *stop = true;
      return Status::ok();
    }
    const int32_t one[1] = {id};
    return commit(one, vocab.piece(id));
  }

  // Log P of every option of the slot by teacher forcing its tokens from here: the sum of the
  // grammar-masked log-softmax of each token. option_ids[o] receives the option's tokens.
  Status option_log_probs(const grammar::Slot& sl, std::vector<std::vector<int32_t>>* option_ids,
                          std::vector<double>* logp) {
    const int32_t V = static_cast<int32_t>(d_.runner_->vocab());
    slot_logits_.assign(logits_, logits_ + V);
    const int64_t at = d_.cache_->seq_length(d_.seq_);
    const size_t k = sl.texts.size();
    logp->assign(k, 0.0);
    option_ids->assign(k, {});
    for (size_t o = 0; o < k; ++o) {
      std::vector<int32_t>& ids = (*option_ids)[o];
      LAYA_RETURN_IF_ERROR(d_.text_.tokenizer->encode(sl.texts[o], {}, &ids));
      if (ids.empty())
        return Status(StatusCode::kInternal, "the option " + sl.texts[o] + " has no tokens");
      states_.clear();
      grammar::GrammarMatcher walk = m_;
      for (int32_t id : ids) {
        if (id < 0 || id >= V || !ta_.allowed(walk.state(), id))
          return Status(StatusCode::kInternal,
                        "the option " + sl.texts[o] + " does not tokenize within the grammar");
        states_.push_back(walk);
        LAYA_RETURN_IF_ERROR(walk.accept(id));
      }
      double& lp = (*logp)[o];
      lp = masked_log_prob(slot_logits_.data(), states_[0].mask(), V, ids[0]);
      if (ids.size() > 1) {
        const Status st =
            d_.append(std::span(ids).first(ids.size() - 1), [&](size_t i, const float* row) {
              lp += masked_log_prob(row, states_[i + 1].mask(), V, ids[i + 1]);
            });
        const Status rm = d_.cache_->remove(d_.seq_, at);
        LAYA_RETURN_IF_ERROR(st);
        LAYA_RETURN_IF_ERROR(rm);
      }
    }
    return Status::ok();
  }

  // A slot: every option scored, one taken (the argmax, or a draw when sampling), the field
  // recorded at the slot's path.
  Status score_slot(int32_t slot, SchemaDecision* out, bool* stop) {
    const grammar::Slot& sl = ta_.chars().slots()[static_cast<size_t>(slot)];
    std::vector<std::vector<int32_t>> option_ids;
    std::vector<double> logp;
    LAYA_RETURN_IF_ERROR(option_log_probs(sl, &option_ids, &logp));
    const size_t k = sl.texts.size();
    FieldResult field;
    field.options = sl.texts;
    const float T = d_.temps_.get(decision::QType::kChoice, static_cast<int>(k));
    double mx = -INFINITY;
    for (double v : logp) mx = std::max(mx, v / T);
    field.p.resize(k);
    double sum = 0;
    for (size_t o = 0; o < k; ++o) sum += field.p[o] = std::exp(logp[o] / T - mx);
    for (double& v : field.p) v /= sum;
    size_t pick = 0;
    if (sampler_.greedy()) {
      for (size_t o = 1; o < k; ++o)
        if (field.p[o] > field.p[pick]) pick = o;
    } else {
      const double u = sampler_.uniform();
      double run = 0;
      pick = k - 1;
      for (size_t o = 0; o < k; ++o) {
        run += field.p[o];
        if (u < run) {
          pick = o;
          break;
        }
      }
    }
    double ent = 0;
    for (double v : field.p)
      if (v > 0) ent -= v * std::log(v);
    field.confidence =
        k < 2 ? 1.0 : std::clamp(1.0 - ent / std::log(static_cast<double>(k)), 0.0, 1.0);
    const double gate = min_confidence_for(
        req_.min_confidence, decision::temp_bucket(decision::QType::kChoice, static_cast<int>(k)));
    field.needs_review = gate >= 0 && field.confidence < gate;
    field.chosen = static_cast<int32_t>(pick);
    field.path = grammar::slot_path_name(sl.path, items_.any_items(sl.path));
    if (!budget(option_ids[pick].size())) {
      *stop = true;
      return Status::ok();
    }
    LAYA_RETURN_IF_ERROR(m_.accept_bytes(sl.texts[pick].data(), sl.texts[pick].size()));
    LAYA_RETURN_IF_ERROR(commit(option_ids[pick], sl.texts[pick]));
    auto same = std::find_if(out->fields.begin(), out->fields.end(),
                             [&](const FieldResult& f) { return f.path == field.path; });
    if (same != out->fields.end())
      *same = std::move(field);
    else
      out->fields.push_back(std::move(field));
    return Status::ok();
  }

  DecoderDecider& d_;
  const grammar::TokenAutomaton& ta_;
  const DecoderRequest& req_;
  const DecoderSchemaRequest& sr_;
  Sampler& sampler_;
  const DecoderDecideOptions& opts_;
  Clock::time_point origin_;
  double t0_;
  grammar::GrammarMatcher m_;
  const float* logits_ = nullptr;
  std::string text_;
  std::vector<int32_t> out_ids_;
  ItemIndices items_;
  std::vector<float> slot_logits_;
  std::vector<grammar::GrammarMatcher> states_;
  StatusCode overrun_ = StatusCode::kOk;
  std::string overrun_why_;
  double first_token_ms_ = -1;
};

Status DecoderDecider::decide_schema(const json::Value& state, const DecoderRequest& req,
                                     const DecoderDecideOptions& opts, SchemaDecision* out) {
  *out = SchemaDecision();
  const Clock::time_point origin = Clock::now();
  const double t0 = decide_clock_ms(opts, origin);
  auto elapsed = [&] { return decide_clock_ms(opts, origin) - t0; };
  const DecoderSchemaRequest& sr = req.schema_request;
  LAYA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::TokenAutomaton> ta,
                        automata_->get(sr.schema));
  SamplerConfig sc = opts.sampler;
  sc.stop_ids = text_.stop_ids;
  LAYA_ASSIGN_OR_RETURN(Sampler sampler,
                        Sampler::create(sc, static_cast<int32_t>(runner_->vocab())));
  SchemaWalk walk(*this, *ta, req, sampler, opts, origin, t0);
  LAYA_ASSIGN_OR_RETURN(DecoderPrompt prompt, schema_prompt(text_, state, sr.schema, req.system));
  const PrefixCacheStats before = prefix_ ? prefix_->stats() : PrefixCacheStats{};
  LAYA_ASSIGN_OR_RETURN(const int64_t hit,
                        prefill_prompt(prompt.ids, std::span(prompt.ids).first(prompt.shared)));
  const double prefill_ms = elapsed();
  LAYA_RETURN_IF_ERROR(walk.run(out));
  const double total_ms = elapsed();
  LAYA_RETURN_IF_ERROR(cache_->remove(seq_));

  if (walk.overrun()) {
    if (!sr.fallback) return walk.overrun_status();
    out->decision = *sr.fallback;
    out->fields.clear();
    out->fallback = true;
  } else {
    Result<Value> parsed = json::parse(walk.text(), {}, "decision");
    if (!parsed.is_ok())
      return Status(StatusCode::kInternal, std::string("the generated decision is not JSON: ") +
                                               parsed.status().message());
    const Status valid = grammar::schema_validate(ta->schema(), *parsed);
    if (!valid.is_ok())
      return Status(StatusCode::kInternal,
                    std::string("the generated decision fails the schema: ") + valid.message());
    out->decision = std::move(parsed).value();
  }
  out->usage.input_tokens = static_cast<int64_t>(prompt.ids.size());
  out->usage.prefix_hit_tokens = hit;
  out->usage.output_tokens = static_cast<int64_t>(walk.tokens());
  DecoderTimings& t = out->timings;
  t.load_ms = opts.load_ms;
  t.ttft_ms = walk.first_token_ms() < 0 ? prefill_ms : walk.first_token_ms();
  t.prefill_ms = prefill_ms;
  const double decode_ms = total_ms - prefill_ms;
  t.decode_tokens_per_s =
      decode_ms > 0 ? static_cast<double>(walk.tokens()) * 1000.0 / decode_ms : 0.0;
  const PrefixCacheStats after = prefix_ ? prefix_->stats() : PrefixCacheStats{};
  t.prefix_hits = after.hits - before.hits;
  t.prefix_misses = after.misses - before.misses;
  t.prefix_hit_tokens = after.hit_tokens - before.hit_tokens;
  return Status::ok();
}

}  // namespace laya::runtime
