#include "runtime/decisions/request.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "runtime/text/pystr.h"
#include "runtime/decisions/router.h"
#include "runtime/decisions/schema.h"

namespace laya::decision {

namespace {

using json::Kind;
using json::Value;

Status invalid(std::string msg) {
  return Status(StatusCode::kRequestInvalid, msg);
}
Status too_large(std::string msg) {
  return Status(StatusCode::kRequestTooLarge, msg);
}
Status unprocessable(std::string msg) {
  return Status(StatusCode::kRequestUnprocessable, msg);
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string qrepr(const std::string& id) {
  return py::repr(std::string_view(id));
}

// Python truthiness of what json.loads returns.
bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kNull:
      return false;
    case Kind::kBool:
      return v.as_bool();
    case Kind::kNumber:
      return v.as_double() != 0.0 || (v.is_integer() && v.as_string() != "0");
    case Kind::kString:
      return !v.as_string().empty();
    case Kind::kArray:
      return !v.items().empty();
    case Kind::kObject:
      return !v.members().empty();
  }
  return false;
}

// Exact integer digits of an integral number value (bools as 1 / 0), or "" when not integral.
std::string integral_digits(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? "1" : "0";
  if (v.is_integer()) return v.as_string();
  const double d = v.as_double();
  if (!std::isfinite(d) || d != std::floor(d)) return "";
  std::string s = py::format_fixed(d, 0);
  return s == "-0" ? "0" : s;
}

// Python ==, for the labels a list of choice criteria can hold (str, int, float, bool).
bool py_equal(const Value& a, const Value& b) {
  const bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (a.is_string() || b.is_string()) return a.is_string() && b.is_string() && a == b;
  if (!an || !bn) return false;
  if ((a.is_number() && !a.is_integer()) && (b.is_number() && !b.is_integer()))
    return a.as_double() == b.as_double();
  const std::string da = integral_digits(a), db = integral_digits(b);
  return !da.empty() && da == db;
}

// _state_length_lower_bound_over(state, cap): a lower bound on the serialized length, read from
// the string values only, as upstream reports it (0 when not proven over the cap).
int64_t state_length_lower_bound_over(const Value& state, int64_t cap) {
  int64_t total = 0;
  int budget = 64;
  std::vector<const Value*> stack = {&state};
  while (!stack.empty() && budget > 0) {
    --budget;
    const Value* item = stack.back();
    stack.pop_back();
    if (item->is_string()) {
      total += static_cast<int64_t>(code_points(item->as_string()));
      if (total > cap) return total;
    } else if (item->is_object()) {
      for (const auto& m : item->members()) stack.push_back(&m.value);
    } else if (item->is_array()) {
      for (const auto& v : item->items()) stack.push_back(&v);
    } else {
      return 0;
    }
  }
  return 0;
}

int64_t state_length(const Value& state) {
  if (state.is_string()) return static_cast<int64_t>(code_points(state.as_string()));
  if (int64_t over = state_length_lower_bound_over(state, kMaxStateChars)) return over;
  return static_cast<int64_t>(code_points(serialize_state(state)));
}

// serve._check_request_limits.
Status check_request_limits(const Value& state, const Value* questions, int max_choice) {
  if (state.is_null()) return invalid("'state' is required");
  if (!questions->is_object()) return invalid("'questions' must be an object");
  const size_t nq = questions->members().size();
  if (nq > kMaxQuestions)
    return too_large("too many questions (" + std::to_string(nq) + " > " +
                     std::to_string(kMaxQuestions) + ")");
  int64_t total = 0;
  for (const auto& m : questions->members()) {
    const Value& q = m.value;
    if (!q.is_object()) continue;
    const Value* crit = q.find("criteria");
    const Value* type = q.find("type");
    const bool is_choice = type && type->is_string() && type->as_string() == "choice";
    const bool is_score = type && type->is_string() && type->as_string() == "score";
    if (is_choice && crit && (crit->is_object() || crit->is_array())) {
      const int64_t count =
          static_cast<int64_t>(crit->is_object() ? crit->members().size() : crit->items().size());
      total += count;
      if (count > max_choice)
        return too_large("too many choice options for " + qrepr(m.key) + " (" +
                         std::to_string(count) + " > " + std::to_string(max_choice) + ")");
    } else if (is_score && crit && crit->is_array()) {
      const int64_t count = static_cast<int64_t>(crit->items().size());
      total += count;
      if (count > kMaxScoreLevels)
        return too_large("too many score levels for " + qrepr(m.key) + " (" +
                         std::to_string(count) + " > " + std::to_string(kMaxScoreLevels) + ")");
      for (size_t i = 0; i < crit->items().size(); ++i)
        if (crit->items()[i].is_null())
          return unprocessable("score question " + qrepr(m.key) + " has a null level at index " +
                               std::to_string(i) + "; give every level a description");
    }
  }
  if (total > kMaxTotalOptions)
    return too_large("too many answer options across questions (" + std::to_string(total) + " > " +
                     std::to_string(kMaxTotalOptions) + ")");
  const int64_t len = state_length(state);
  if (len > kMaxStateChars)
    return too_large("state too large (" + std::to_string(len) + " > " +
                     std::to_string(kMaxStateChars) + " chars)");
  return Status::ok();
}

// serve._validate_budget_param.
Result<std::optional<int>> budget_param(const Value& body, const char* key) {
  const Value* v = body.find(key);
  if (!v || v->is_null()) return std::optional<int>();
  if (!v->is_integer()) return unprocessable(std::string(key) + " must be an integer");
  const std::string& digits = v->as_string();
  if (digits[0] == '-' || digits == "0")
    return unprocessable(std::string(key) + " must be a positive integer");
  const std::optional<int64_t> n = v->as_int64();
  if (!n || *n > kMaxTokenBudget)
    return unprocessable(std::string(key) + " exceeds server limit (" + digits + " > " +
                         std::to_string(kMaxTokenBudget) + ")");
  return std::optional<int>(static_cast<int>(*n));
}

Status check_noul_labels(const Value* labels) {
  static const char* kMsg =
      "noul labels must map exactly 'false' and 'true' to distinct non-empty strings";
  if (!labels || labels->is_null()) return Status::ok();
  if (!labels->is_object() || labels->members().size() != 2 || !labels->find("false") ||
      !labels->find("true"))
    return unprocessable(kMsg);
  const Value* f = labels->find("false");
  const Value* t = labels->find("true");
  if (!f->is_string() || !t->is_string()) return unprocessable(kMsg);
  const std::u32string fs(py::strip(py::decode(f->as_string())));
  const std::u32string ts(py::strip(py::decode(t->as_string())));
  if (fs.empty() || ts.empty() || fs == ts) return unprocessable(kMsg);
  return Status::ok();
}

std::string stripped(const std::string& s) {
  return py::encode(py::strip(py::decode(s)));
}

}  // namespace

const char* qtype_name(QType t) {
  switch (t) {
    case QType::kChoice:
      return "choice";
    case QType::kScore:
      return "score";
    case QType::kNoul:
      return "noul";
  }
  return "choice";
}

std::string render_criterion(const Value& v) {
  return v.is_string() ? v.as_string() : json::dump(v);
}

std::string serialize_state(const Value& state) {
  return state.is_string() ? state.as_string() : json::dump(state);
}

Result<MinConfidence> check_min_confidence(const Value& v) {
  auto one = [](const Value& x) -> Result<double> {
    if (x.is_number()) {
      const double d = x.as_double();
      if (std::isfinite(d) && d >= 0.0 && d <= 1.0 && !(x.is_integer() && !x.as_int64())) return d;
    }
    return unprocessable("min_confidence must be a float in [0.0, 1.0], got " + py::repr(x));
  };
  MinConfidence mc;
  mc.present = true;
  if (v.is_object()) {
    if (v.members().empty())
      return unprocessable(
          "a min_confidence map must be a non-empty dict of bucket -> float, got {}");
    mc.is_map = true;
    for (const auto& m : v.members()) {
      bool allowed = m.key == "default";
      for (const char* t : {"choice", "score", "noul"})
        for (const char* s : {"2", "3-5", "6-10", "11+"})
          allowed |= m.key == std::string(t) + ":" + s;
      if (!allowed)
        return unprocessable(
            "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got " +
            qrepr(m.key));
      LAYA_ASSIGN_OR_RETURN(double d, one(m.value));
      mc.buckets.emplace_back(m.key, d);
    }
    return mc;
  }
  LAYA_ASSIGN_OR_RETURN(mc.value, one(v));
  return mc;
}

Result<Question> parse_question(const std::string& id, const Value& def) {
  const std::string q = qrepr(id);
  if (py::strip(py::decode(id)).empty())
    return unprocessable("question id must be a non-empty string, got " + q);
  if (!def.is_object())
    return unprocessable("question " + q + ": definition must be a dict, got " +
                         py::type_name(def));
  const Value* type = def.find("type");
  Question out;
  out.id = id;
  const std::string tname = type && type->is_string() ? type->as_string() : "";
  if (tname == "choice") {
    out.type = QType::kChoice;
  } else if (tname == "score") {
    out.type = QType::kScore;
  } else if (tname == "noul") {
    out.type = QType::kNoul;
  } else {
    return unprocessable("question " + q + ": unknown type " + py::repr(type ? *type : Value()) +
                         "; use one of ['choice', 'noul', 'score']");
  }
  const Value* ins = def.find("instructions");
  if (!ins)
    return unprocessable("question " + q +
                         ": no 'instructions'; add the text the model should answer");
  if (ins->is_null())
    return unprocessable("question " + q +
                         ": 'instructions' must not be None; add the text the model should answer");
  if ((ins->is_string() && py::strip(py::decode(ins->as_string())).empty()) ||
      (ins->is_array() && ins->items().empty()) || (ins->is_object() && ins->members().empty()))
    return unprocessable(
        "question " + q +
        ": 'instructions' must not be empty; add the text the model should answer");
  const Value* crit = def.find("criteria");
  if (out.type == QType::kChoice) {
    if (!crit || !(crit->is_object() || crit->is_array()))
      return unprocessable("question " + q +
                           ": a choice question takes 'criteria' as a dict of label -> "
                           "description, or a list of labels");
    const bool empty = crit->is_object() ? crit->members().empty() : crit->items().empty();
    if (empty)
      return unprocessable("question " + q + ": a choice question needs at least one criterion");
    if (crit->is_array()) {
      const auto& items = crit->items();
      for (size_t i = 0; i < items.size(); ++i) {
        const Value& label = items[i];
        if (label.is_array() || label.is_object())
          return unprocessable(
              "question " + q + ": choice label " + std::to_string(i) + " is a " +
              py::type_name(label) +
              "; a label is rendered as option text and used as the answer key, so it must be a "
              "scalar (a string, number or bool), got " +
              py::repr(label));
        if (label.is_null())
          return unprocessable(
              "question " + q + ": choice label " + std::to_string(i) +
              " is null; a label is rendered as option text and used as the answer key, so it "
              "must be a string, number or bool -- a null label renders as the text \"None\" "
              "while its answer key is \"null\"");
      }
      for (size_t i = 0; i < items.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (py_equal(items[j], items[i]))
            return unprocessable("question " + q + ": choice label " + std::to_string(i) + " (" +
                                 py::repr(items[i]) + ") repeats label " + std::to_string(j) +
                                 "; the labels are the answer keys, so every option needs its "
                                 "own (1, 1.0 and True are one key)");
      for (const Value& label : items) {
        out.labels.push_back(label);
        out.descriptions.emplace_back();
      }
    } else {
      for (const auto& m : crit->members()) {
        out.labels.push_back(Value::string(m.key));
        out.descriptions.push_back(m.value);
      }
    }
  } else if (out.type == QType::kScore) {
    if (!crit || !crit->is_array())
      return unprocessable("question " + q +
                           ": a score question takes 'criteria' as a list of level descriptions, "
                           "index 0 first");
    if (crit->items().empty())
      return unprocessable("question " + q + ": a score question needs at least one level");
    for (size_t i = 0; i < crit->items().size(); ++i)
      if (crit->items()[i].is_null())
        return unprocessable("question " + q + ": score level " + std::to_string(i) +
                             " is null; give every level a description, index 0 first");
  } else if (crit && !crit->is_null() && !crit->is_object()) {
    return unprocessable("question " + q +
                         ": a noul question takes 'criteria' as a dict with optional "
                         "'true'/'false' descriptions, or omits it");
  } else if (crit && crit->is_object()) {
    std::set<std::string> keys;
    for (const auto& m : crit->members()) keys.insert(py::encode(py::lower(py::decode(m.key))));
    bool ok = true;
    for (const auto& k : keys) ok &= k == "true" || k == "false";
    if (!ok) {
      std::string list = "[";
      for (auto it = keys.begin(); it != keys.end(); ++it) {
        if (it != keys.begin()) list += ", ";
        list += qrepr(*it);
      }
      list += "]";
      return unprocessable(
          "question " + q +
          ": a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and "
          "omitted is fine), got " +
          list +
          ". Those keys are the option texts the model reads; any other key was silently dropped "
          "and replaced with the defaults. If you want the answer worded differently, keep "
          "'criteria' keyed 'true'/'false' and set 'labels' instead.");
    }
  }
  const int n_options = out.type == QType::kNoul    ? 2
                        : crit && crit->is_object() ? static_cast<int>(crit->members().size())
                        : crit && crit->is_array()  ? static_cast<int>(crit->items().size())
                                                    : 0;
  if (const Value* order = def.find("option_order")) {
    std::vector<int64_t> ints;
    if (order->is_array())
      for (const Value& v : order->items())
        if (v.is_integer()) ints.push_back(v.as_int64().value_or(INT64_MAX));
    std::sort(ints.begin(), ints.end());
    bool ok = order->is_array() && static_cast<int>(order->items().size()) == n_options &&
              static_cast<int>(ints.size()) == n_options;
    for (int i = 0; ok && i < n_options; ++i) ok = ints[static_cast<size_t>(i)] == i;
    if (!ok)
      return unprocessable("question " + q + ": 'option_order' must be a permutation of range(" +
                           std::to_string(n_options) +
                           ") -- one slot per option, each option once -- got " + py::repr(*order));
    for (const Value& v : order->items())
      out.option_order.push_back(static_cast<int>(*v.as_int64()));
  }
  const Value* labels = def.find("labels");
  if (labels) {
    if (out.type != QType::kNoul)
      return unprocessable("question " + q + ": 'labels' is only supported for noul questions");
    Status st = check_noul_labels(labels);
    if (!st.is_ok()) return unprocessable("question " + q + ": " + st.message());
  }

  // _to_internal + render_options.
  out.instructions = ins->is_string() ? ins->as_string() : json::dump(*ins);
  if (out.type == QType::kChoice) {
    for (size_t i = 0; i < out.labels.size(); ++i) {
      const Value& d = out.descriptions[i];
      const std::string label = py::str(out.labels[i]);
      out.options.push_back((d.is_null() || (d.is_string() && d.as_string().empty()))
                                ? label
                                : label + ": " + render_criterion(d));
    }
  } else if (out.type == QType::kScore) {
    for (size_t i = 0; i < crit->items().size(); ++i) {
      out.legend.push_back(render_criterion(crit->items()[i]));
      out.options.push_back("level " + std::to_string(i) + ": " + out.legend.back());
    }
  } else {
    std::string false_label = "false", true_label = "true";
    if (labels && labels->is_object()) {
      false_label = stripped(labels->find("false")->as_string());
      true_label = stripped(labels->find("true")->as_string());
    }
    const Value* fc = nullptr;
    const Value* tc = nullptr;
    if (crit && crit->is_object()) {
      // {str(k).lower(): v}: a later spelling of the same key replaces the value.
      for (const auto& m : crit->members()) {
        const std::string k = py::encode(py::lower(py::decode(m.key)));
        (k == "false" ? fc : tc) = &m.value;
      }
    }
    auto describe = [](const Value* c, const char* fallback) {
      return (!c || c->is_null() || (c->is_string() && c->as_string().empty()))
                 ? std::string(fallback)
                 : render_criterion(*c);
    };
    out.options.push_back(false_label + ": " + describe(fc, "no, the statement does not hold"));
    out.options.push_back(true_label + ": " + describe(tc, "yes, the statement holds"));
  }
  return out;
}

Status check_server_limits(const Value& state, const Value* questions, int max_choice) {
  return check_request_limits(state, questions, max_choice);
}

Result<DecisionRequest> parse_request(std::string_view body, RequestMode mode) {
  const bool server = mode == RequestMode::kServer;
  if (server && body.size() > kMaxBodyBytes) return too_large("request body too large");
  json::ParseOptions opts;
  opts.max_bytes = server ? kMaxBodyBytes : body.size();
  Result<Value> v = json::parse(body, opts, "request body");
  if (!v.is_ok())
    return invalid(std::string("request body must be valid JSON (") + v.status().message() + ")");
  return parse_request(*v, mode);
}

namespace {

// The SDK's own checks (RequestMode::kLibrary), in the order Agent.predict_batch,
// predict_shortlist and decide make them.
Result<DecisionRequest> parse_library(const Value& body) {
  DecisionRequest req;
  if (!body.is_object()) return invalid("the request must be a JSON object");
  req.batch = body.find("states") != nullptr;
  const Value* schema = body.find("schema");
  const Value* questions = body.find("questions");
  if (schema && !schema->is_null()) {
    if (questions && !questions->is_null())
      return unprocessable("pass exactly one of schema= or questions=");
    req.schema = true;
  }
  if (const Value* rd = body.find("return_details"); rd && !rd->is_null()) {
    if (!rd->is_bool()) return unprocessable("return_details must be a boolean");
    req.return_details = rd->as_bool();
  }
  auto questions_dict = [&](const Value* q) -> Status {
    if (!q || !q->is_object())
      return invalid(std::string("questions must be a dict of question id -> definition, got ") +
                     (q ? py::type_name(*q) : "NoneType"));
    return Status::ok();
  };
  if (const Value* sl = body.find("shortlist");
      sl && !sl->is_null() && !(sl->is_bool() && !sl->as_bool())) {
    LAYA_RETURN_IF_ERROR(questions_dict(questions));
    if (sl->is_bool())
      req.shortlist_k = kDefaultShortlistK;
    else if (sl->is_integer() && sl->as_int64() && *sl->as_int64() >= 1 &&
             *sl->as_int64() <= 1000000)
      req.shortlist_k = static_cast<int>(*sl->as_int64());
    else
      return unprocessable("k must be a positive integer, got " + py::repr(*sl));
  }
  if (const Value* mc = body.find("min_confidence"); mc && !mc->is_null()) {
    LAYA_ASSIGN_OR_RETURN(req.min_confidence, check_min_confidence(*mc));
  }
  Value planned;
  if (req.schema) {
    LAYA_ASSIGN_OR_RETURN(req.fields, plan_schema(*schema));
    planned = Value::object();
    for (const SchemaField& f : req.fields) planned.set(f.name, f.question);
    questions = &planned;
  }
  if (req.batch) {
    const Value& states = *body.find("states");
    if (states.is_string() || states.is_object())
      return invalid(
          "predict_batch expects a list of states; pass a single state to predict()/system_one().");
    if (!states.is_array()) return invalid("states must be a list of states");
    LAYA_RETURN_IF_ERROR(questions_dict(questions));
    for (const Value& s : states.items()) {
      if (s.is_null()) return invalid("state must not be None; pass a string, dict, or list");
      req.states.push_back(s);
    }
  } else {
    LAYA_RETURN_IF_ERROR(questions_dict(questions));
    const Value* state = body.find("state");
    if (!state || state->is_null())
      return invalid("state must not be None; pass a string, dict, or list");
    req.states.push_back(*state);
  }
  for (const char* key : {"max_len", "head_max_len"}) {
    const Value* v = body.find(key);
    if (!v || v->is_null()) continue;
    if (!v->is_integer() || !v->as_int64())
      return unprocessable(std::string(key) + " must be an integer");
    (std::string(key) == "max_len" ? req.max_len : req.head_max_len) =
        static_cast<int>(std::clamp<int64_t>(*v->as_int64(), 0, int64_t{1} << 30));
  }
  if (const Value* bs = body.find("batch_size");
      bs && bs->is_integer() && bs->as_int64() && *bs->as_int64() > 0)
    req.batch_size = static_cast<int>(std::min<int64_t>(*bs->as_int64(), int64_t{1} << 30));
  if (req.states.empty()) return req;  // predict_batch([]) answers [] before reading questions
  for (const auto& m : questions->members()) {
    LAYA_ASSIGN_OR_RETURN(Question q, parse_question(m.key, m.value));
    req.questions.push_back(std::move(q));
  }
  return req;
}

}  // namespace

Result<DecisionRequest> parse_request(const Value& body, RequestMode mode) {
  if (mode == RequestMode::kLibrary) return parse_library(body);
  DecisionRequest req;
  const bool batch = body.is_object() && body.find("states");
  const bool schema = body.is_object() && body.find("schema") && !body.find("questions");
  if (batch) {
    if (!body.find("questions") && !schema)
      return invalid("request body must be an object with 'states' and 'questions' fields");
  } else if (!body.is_object() || (!body.find("questions") && !schema)) {
    return invalid("request body must be an object with a 'questions' field");
  }
  if (body.find("questions") && body.find("schema") && !body.find("schema")->is_null())
    return unprocessable("pass exactly one of schema= or questions=");
  if (batch && body.find("state"))
    return invalid("request body must carry either 'state' or 'states', not both");
  req.batch = batch;
  req.schema = schema;
  if (const Value* rd = body.find("return_details"); rd && !rd->is_null()) {
    if (!rd->is_bool()) return unprocessable("return_details must be a boolean");
    req.return_details = rd->as_bool();
  }

  // Shortlisting narrows a choice before it is read, so its per-choice cap is the total cap, as
  // upstream's server raises it for the elimination path.
  const Value* shortlist = body.find("shortlist");
  if (shortlist && !shortlist->is_null()) {
    if (shortlist->is_bool()) {
      if (shortlist->as_bool()) req.shortlist_k = kDefaultShortlistK;
    } else if (shortlist->is_integer() && shortlist->as_int64() && *shortlist->as_int64() >= 1 &&
               *shortlist->as_int64() <= 1000000) {
      req.shortlist_k = static_cast<int>(*shortlist->as_int64());
    } else {
      return unprocessable("k must be a positive integer, got " + py::repr(*shortlist));
    }
    if (req.shortlist_k && batch)
      return invalid("'shortlist' answers one 'state'; send one request per state");
    if (req.shortlist_k && schema)
      return invalid("'shortlist' narrows 'questions'; a 'schema' request has at most 32 options");
  }
  const int max_choice = req.shortlist_k ? kMaxTotalOptions : kMaxChoiceOptions;

  // The questions: given, or planned from the schema.
  Value planned;
  const Value* questions = body.find("questions");
  if (schema) {
    LAYA_ASSIGN_OR_RETURN(req.fields, plan_schema(*body.find("schema")));
    planned = Value::object();
    for (const SchemaField& f : req.fields) planned.set(f.name, f.question);
    questions = &planned;
  }

  if (batch) {
    const Value* states = body.find("states");
    if (!states->is_array() || states->items().empty())
      return invalid("'states' must be a non-empty list");
    if (states->items().size() > static_cast<size_t>(kMaxBatchStates))
      return too_large("too many states in batch (" + std::to_string(states->items().size()) +
                       " > " + std::to_string(kMaxBatchStates) + ")");
    for (const Value& s : states->items()) {
      LAYA_RETURN_IF_ERROR(check_request_limits(s, questions, max_choice));
      req.states.push_back(s);
    }
  } else {
    const Value* state = body.find("state");
    const Value st = state ? *state : Value();
    LAYA_RETURN_IF_ERROR(check_request_limits(st, questions, max_choice));
    req.states.push_back(st);
  }

  std::vector<std::string> refused;
  for (const char* k :
       {"hooks", "hooks_raise", "hooks_timeout", "on_predict_end", "on_predict_start"})
    if (body.find(k) && !body.find(k)->is_null()) refused.emplace_back(k);
  if (!refused.empty()) {
    std::string names;
    for (size_t i = 0; i < refused.size(); ++i) names += (i ? ", " : "") + refused[i];
    return unprocessable(names +
                         " run inside the server process and cannot be sent to this endpoint; "
                         "install them where laya-serve runs, or drop them");
  }
  if (batch && body.find("diagnostics") && !body.find("diagnostics")->is_null())
    return unprocessable(
        "diagnostics is filled in place for an in-process caller and cannot be returned over "
        "HTTP; read the per-group report from the CLI or a local Router");

  // serve._resolve_model: published ids and the bundle id; a name or alias; a Jev id such as
  // "jev-1" means "let the router choose"; a path or an unknown Hub id is refused.
  LAYA_ASSIGN_OR_RETURN(Router router, Router::create());
  json::Value effective_model;
  if (const Value* model = body.find("model"); model && truthy(*model)) {
    req.model = *model;
    const std::string text = stripped(py::str(*model));
    const std::string low = py::encode(py::lower(py::decode(text)));
    if (low == "convaiinnovations/laya-multilingual") {
      effective_model = Value::string("multilingual");
    } else if (low == "convaiinnovations/laya-typed-decisions") {
      effective_model = Value::string("typed-decisions");
    } else if (low != "convaiinnovations/laya") {
      Result<std::string> name = router.resolve(*model);
      if (name.is_ok()) {
        effective_model = Value::string(*name);
      } else if (!text.empty() && (text[0] == '.' || text[0] == '~' ||
                                   text.find_first_of("/\\") != std::string::npos)) {
        return unprocessable(std::string(name.status().message()) +
                             ", or omit model to let the router choose");
      }
    }
  }
  LAYA_ASSIGN_OR_RETURN(req.max_len, budget_param(body, "max_len"));
  LAYA_ASSIGN_OR_RETURN(req.head_max_len, budget_param(body, "head_max_len"));
  for (const char* key : {"lang", "lang_guess"}) {
    const Value* v = body.find(key);
    if (v && !v->is_null() && !v->is_string())
      return unprocessable(std::string(key) +
                           " must be a language code string such as \"de\", or null");
  }
  if (const Value* lang = body.find("lang")) req.lang = *lang;
  if (const Value* lang_guess = body.find("lang_guess")) req.lang_guess = *lang_guess;
  if (const Value* mc = body.find("min_confidence"); mc && !mc->is_null()) {
    LAYA_ASSIGN_OR_RETURN(req.min_confidence, check_min_confidence(*mc));
  }
  if (batch) {
    if (const Value* bs = body.find("batch_size"); bs && !bs->is_null()) {
      if (!bs->is_integer()) return unprocessable("batch_size must be an integer");
      const std::optional<int64_t> n = bs->as_int64();
      if (!n || *n < 1)
        return unprocessable("batch_size must be a positive integer, got " + py::repr(*bs));
      req.batch_size = static_cast<int>(std::min<int64_t>(*n, kMaxBatchStates));
    }
    if (const Value* s = body.find("sort_by_length"); s && !s->is_null() && !s->is_bool())
      return unprocessable("sort_by_length must be a boolean");
  }
  // Router.predict routes before it reads the questions: an unknown task is refused first.
  if (const Value* task = body.find("task"); task && !task->is_null()) {
    req.task = *task;
    if (effective_model.is_null()) {
      RouteQuery rq;
      rq.state = req.states[0];
      rq.task = *task;
      Result<json::Value> d = router.route(rq);
      if (!d.is_ok()) return d.status();
    }
  }

  // Agent.predict_batch: every question checked and normalized, in body order.
  for (const auto& m : questions->members()) {
    LAYA_ASSIGN_OR_RETURN(Question q, parse_question(m.key, m.value));
    req.questions.push_back(std::move(q));
  }
  return req;
}

}  // namespace laya::decision
