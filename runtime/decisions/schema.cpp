#include "runtime/decisions/schema.h"

#include <cmath>
#include <string>

#include "runtime/text/pystr.h"

namespace laya::decision {

namespace {

using json::Value;

Status schema_error(const std::string& msg) {
  return Status(StatusCode::kRequestUnprocessable, msg);
}

bool falsy(const Value* v) {
  if (!v || v->is_null()) return true;
  if (v->is_bool()) return !v->as_bool();
  if (v->is_string()) return v->as_string().empty();
  if (v->is_number()) return v->as_double() == 0.0 && (!v->is_integer() || v->as_string() == "0");
  if (v->is_array()) return v->items().empty();
  return v->members().empty();
}

Value instructions_or(const Value* description, const std::string& fallback) {
  return falsy(description) ? Value::string(fallback) : *description;
}

SchemaField noul_field(const std::string& name, const Value* description) {
  SchemaField f;
  f.name = name;
  f.kind = QType::kNoul;
  f.question = Value::object();
  f.question.set("type", Value::string("noul"));
  f.question.set("instructions", instructions_or(description, "Is `" + name + "` true?"));
  return f;
}

Result<SchemaField> enum_field(const std::string& path, const std::string& name,
                               const Value& values, const Value* description) {
  if (!values.is_array())
    return schema_error(path + ": 'enum' must be an array of values, got " + py::type_name(values));
  const auto& items = values.items();
  if (items.size() > static_cast<size_t>(kSchemaMaxOptions))
    return schema_error(path + ": " + std::to_string(items.size()) +
                        " options exceeds MAX_OPTIONS=" + std::to_string(kSchemaMaxOptions));
  if (items.empty()) return schema_error(path + ": 'enum' must not be empty");
  bool all_bool = true, any_true = false, any_false = false;
  for (const Value& v : items) {
    all_bool &= v.is_bool();
    if (v.is_bool()) (v.as_bool() ? any_true : any_false) = true;
  }
  if (all_bool && any_true && any_false) return noul_field(name, description);
  SchemaField f;
  f.name = name;
  f.kind = QType::kChoice;
  Value criteria = Value::object();
  for (const Value& v : items) {
    const std::string label = v.is_null() ? "null" : py::str(v);
    if (criteria.find(label))
      return schema_error(path + ": enum values produce duplicate choice labels");
    criteria.set(label, Value());
    f.options.emplace_back(label, v);
  }
  f.question = Value::object();
  f.question.set("type", Value::string("choice"));
  f.question.set("instructions", instructions_or(description, "What is `" + name + "`?"));
  f.question.set("criteria", std::move(criteria));
  return f;
}

Result<SchemaField> score_field(const std::string& path, const std::string& name, const Value& prop,
                                const Value* description) {
  const Value* lo = prop.find("minimum");
  const Value* hi = prop.find("maximum");
  if (!lo || !hi || !lo->is_integer() || !hi->is_integer() || !lo->as_int64() || !hi->as_int64())
    return schema_error(
        path + ": a numeric field needs integer 'minimum' and 'maximum' to become a score");
  const int64_t l = *lo->as_int64(), h = *hi->as_int64();
  if (h < l)
    return schema_error(path + ": 'maximum' " + std::to_string(h) + " is below 'minimum' " +
                        std::to_string(l));
  const int64_t span = h - l + 1;
  if (span > kSchemaMaxScoreLevels)
    return schema_error(path + ": " + std::to_string(span) + " levels exceeds MAX_SCORE_LEVELS=" +
                        std::to_string(kSchemaMaxScoreLevels) +
                        "; narrow the range or use an enum");
  SchemaField f;
  f.name = name;
  f.kind = QType::kScore;
  f.minimum = l;
  Value levels = Value::array();
  for (int64_t v = l; v <= h; ++v) levels.push(Value::string(std::to_string(v)));
  f.question = Value::object();
  f.question.set("type", Value::string("score"));
  f.question.set("instructions",
                 instructions_or(description, "Score `" + name + "` from " + std::to_string(l) +
                                                  " to " + std::to_string(h)));
  f.question.set("criteria", std::move(levels));
  return f;
}

Result<SchemaField> field(const std::string& path, const std::string& name, Value prop,
                          const Value& root, std::vector<Value> seen) {
  if (!prop.is_object())
    return schema_error(path + ": property must be an object, got " + py::type_name(prop));
  while (const Value* ref = prop.find("$ref")) {
    for (const Value& s : seen)
      if (s == *ref)
        return schema_error(path + ": $ref " + py::repr(*ref) +
                            " is recursive; flatten the schema");
    const Value* target = nullptr;
    for (const auto& [prefix, key] : {std::pair<std::string, const char*>{"#/$defs/", "$defs"},
                                      {"#/definitions/", "definitions"}}) {
      const Value* defs = root.find(key);
      if (ref->is_string() && ref->as_string().rfind(prefix, 0) == 0 && defs && defs->is_object())
        target = defs->find(ref->as_string().substr(prefix.size()));
    }
    if (!target || !target->is_object())
      return schema_error(path + ": $ref " + py::repr(*ref) +
                          " does not resolve to an entry of this schema's '$defs' or "
                          "'definitions'");
    Value merged = Value::object();
    for (const auto& m : target->members())
      if (m.key != "description") merged.set(m.key, m.value);
    for (const auto& m : prop.members())
      if (m.key != "$ref") merged.set(m.key, m.value);
    seen.push_back(*ref);
    prop = std::move(merged);
  }
  const Value description = prop.find("description") ? *prop.find("description") : Value();
  const Value* desc = prop.find("description") ? &description : nullptr;
  if (!prop.find("const") && !prop.find("enum") && !prop.find("type")) {
    const Value* wrapped = prop.find("allOf");
    if (wrapped && wrapped->is_array() && wrapped->items().size() == 1 &&
        wrapped->items()[0].is_object()) {
      Value branch = wrapped->items()[0];
      for (const auto& m : prop.members())
        if (m.key != "allOf") branch.set(m.key, m.value);
      return field(path, name, std::move(branch), root, std::move(seen));
    }
    const Value* any_of = prop.find("anyOf");
    const Value* union_ = !falsy(any_of) ? any_of : prop.find("oneOf");
    if (union_ && !union_->is_null()) {
      std::vector<const Value*> branches;
      if (union_->is_array())
        for (const Value& b : union_->items()) {
          const Value* t = b.is_object() ? b.find("type") : nullptr;
          if (b.is_object() && !(t && t->is_string() && t->as_string() == "null"))
            branches.push_back(&b);
        }
      if (branches.size() != 1)
        return schema_error(path +
                            ": only 'Optional[...]' unions (one non-null branch) are supported, "
                            "got " +
                            std::to_string(branches.size()));
      Value branch = *branches[0];
      if (!branch.find("description")) branch.set("description", description);
      return field(path, name, std::move(branch), root, std::move(seen));
    }
  }
  if (const Value* c = prop.find("const")) {
    Value one = Value::array();
    one.push(*c);
    return enum_field(path, name, one, desc);
  }
  if (const Value* e = prop.find("enum")) return enum_field(path, name, *e, desc);
  std::string jtype;
  bool has_type = false;
  if (const Value* t = prop.find("type")) {
    if (t->is_array()) {
      std::vector<const Value*> non_null;
      for (const Value& x : t->items())
        if (!(x.is_string() && x.as_string() == "null")) non_null.push_back(&x);
      if (non_null.size() > 1)
        return schema_error(path +
                            ": 'type' has multiple non-null types; unions are not supported");
      if (!non_null.empty() && non_null[0]->is_string()) {
        jtype = non_null[0]->as_string();
        has_type = true;
      }
    } else if (t->is_string()) {
      jtype = t->as_string();
      has_type = true;
    }
  }
  if (has_type && jtype == "boolean") return noul_field(name, desc);
  if (has_type && jtype == "string")
    return schema_error(path +
                        ": a free string cannot be a fixed option set; use 'enum' or a boolean");
  if (has_type && (jtype == "integer" || jtype == "number"))
    return score_field(path, name, prop, desc);
  if (has_type && jtype == "array")
    return schema_error(path + ": arrays are not supported; ask one field per element");
  if (has_type && jtype == "object")
    return schema_error(path + ": nested objects are not supported; flatten the schema");
  return schema_error(path + ": unsupported schema " + py::repr(prop));
}

}  // namespace

Result<std::vector<SchemaField>> plan_schema(const Value& schema) {
  if (!schema.is_object())
    return schema_error(std::string("expected a JSON schema dict or a pydantic model, got ") +
                        py::type_name(schema));
  const Value* type = schema.find("type");
  if ((type && !type->is_null() && !(type->is_string() && type->as_string() == "object")) ||
      !schema.find("properties"))
    return schema_error("the top level must be an object with 'properties'");
  const Value& props = *schema.find("properties");
  if (!props.is_object() || props.members().empty())
    return schema_error("'properties' must be a non-empty object");
  if (props.members().size() > static_cast<size_t>(kSchemaMaxProperties))
    return schema_error(
        std::to_string(props.members().size()) +
        " properties exceeds MAX_PROPERTIES=" + std::to_string(kSchemaMaxProperties));
  std::vector<SchemaField> out;
  for (const auto& m : props.members()) {
    LAYA_ASSIGN_OR_RETURN(SchemaField f, field("properties." + m.key, m.key, m.value, schema, {}));
    out.push_back(std::move(f));
  }
  return out;
}

Value decision_details(const std::vector<SchemaField>& fields, const Value& result) {
  const Value* answers = result.find("answers");
  Value values = Value::object();
  for (const SchemaField& f : fields) {
    const Value* a = answers ? answers->find(f.name) : nullptr;
    if (!a || a->is_null()) continue;
    const Value* low = a->find("low_confidence");
    if (low && !falsy(low)) {
      values.set(f.name, Value());
      continue;
    }
    if (f.kind == QType::kNoul) {
      const Value* p = a->find("noul");
      values.set(f.name, Value::boolean((p ? p->as_double() : 0.0) >= 0.5));
    } else if (f.kind == QType::kScore) {
      const Value* probs = a->find("probabilities");
      int64_t idx = 0;
      if (probs && !probs->members().empty()) {
        double best = 0.0;
        for (size_t i = 0; i < probs->members().size(); ++i) {
          const Value* p = probs->find(std::to_string(i));
          const double v = p ? p->as_double() : 0.0;
          if (i == 0 || v > best) {
            best = v;
            idx = static_cast<int64_t>(i);
          }
        }
      } else {
        const Value* s = a->find("score");
        idx = static_cast<int64_t>(py::round_int(s ? s->as_double() : 0.0));
      }
      values.set(f.name, Value::integer(f.minimum + idx));
    } else {
      const Value* c = a->find("choice");
      const std::string label = c ? py::str(*c) : "None";
      Value v = Value::string(label);
      for (const auto& [lbl, value] : f.options)
        if (lbl == label) {
          v = value;
          break;
        }
      values.set(f.name, std::move(v));
    }
  }
  Value confidence = Value::object(), probabilities = Value::object(),
        answer_conf = Value::object();
  if (answers) {
    for (const auto& m : answers->members()) {
      const Value& a = m.value;
      const Value* c = a.find("confidence");
      confidence.set(m.key, Value::number(c ? c->as_double() : 0.0));
      const Value* ac = a.find("answer_confidence");
      answer_conf.set(m.key, ac && ac->is_number() && std::isfinite(ac->as_double())
                                 ? Value::number(ac->as_double())
                                 : Value());
      const Value* type = a.find("type");
      if (type && type->is_string() && type->as_string() == "noul") {
        const Value* n = a.find("noul");
        const double p = n ? n->as_double() : 0.0;
        Value pr = Value::object();
        pr.set("false", Value::number(py::round(1.0 - p, 4)));
        pr.set("true", Value::number(py::round(p, 4)));
        probabilities.set(m.key, std::move(pr));
      } else {
        const Value* pr = a.find("probabilities");
        probabilities.set(m.key, pr ? *pr : Value::object());
      }
    }
  }
  Value out = Value::object();
  out.set("values", std::move(values));
  out.set("confidence", std::move(confidence));
  out.set("probabilities", std::move(probabilities));
  out.set("answers", answers ? *answers : Value::object());
  out.set("usage", result.find("usage") ? *result.find("usage") : Value());
  out.set("routing", result.find("routing") ? *result.find("routing") : Value());
  out.set("answer_confidence", std::move(answer_conf));
  return out;
}

}  // namespace laya::decision
