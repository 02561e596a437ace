#include "runtime/decisions/grammar/schema.h"

#include <algorithm>
#include <string_view>

namespace laya::grammar {

namespace {

using json::Kind;
using json::Value;

constexpr const char* kAnnotations[] = {"title",    "description", "default",  "examples",
                                        "$schema",  "$id",         "$comment", "deprecated",
                                        "readOnly", "writeOnly"};

// Keywords each type reads. Everything JSON Schema defines beyond these is refused.
constexpr const char* kObjectKeys[] = {"properties", "required", "additionalProperties"};
constexpr const char* kArrayKeys[] = {"items", "minItems", "maxItems"};
constexpr const char* kStringKeys[] = {"minLength", "maxLength"};
constexpr const char* kNumberKeys[] = {"minimum", "maximum", "exclusiveMinimum",
                                       "exclusiveMaximum"};

template <size_t N>
bool in(const char* const (&list)[N], std::string_view key) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

std::string where(const std::string& path) {
  return path.empty() ? std::string("schema root") : path;
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

Status fail(const std::string& path, const std::string& what) {
  return status_error(StatusCode::kInvalidArgument, "%s: %s", where(path).c_str(), what.c_str());
}

std::string short_dump(const Value& v) {
  std::string s = json::dump(v);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// The implicit bounds of unbounded numbers (see schema.h). Made when the library loads, not in a
// call: a first call would make it in its arena (ir/arena.h).
const Decimal kMaxSafeInteger{false, "9007199254740991", 0};
const Decimal& max_safe_integer() {
  return kMaxSafeInteger;
}
// 10^(15 - max_fraction_digits): a text below it has at most 15 significant digits, which a double
// holds exactly (DBL_DIG), so a JSON reader gets the value the text spells.
Decimal number_limit(int32_t max_fraction_digits) {
  return Decimal{false, "1", 15 - max_fraction_digits};
}

int64_t utf8_length(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

Status validate(const Schema& s, int32_t idx, const Value& v, std::string& path);

class Parser {
 public:
  explicit Parser(const SchemaOptions& opts) : opts_(opts) {}

  Result<int32_t> node(const Value& v, const std::string& path, int depth);
  Schema take() { return std::move(out_); }

 private:
  Result<int64_t> count(const Value& v, const std::string& path, const char* key);
  Status bounds(const Value& obj, const std::string& path, SchemaNode* n);

  const SchemaOptions& opts_;
  Schema out_;
};

Result<int64_t> Parser::count(const Value& v, const std::string& path, const char* key) {
  const std::optional<int64_t> n = v.as_int64();
  if (!v.is_integer() || !n || *n < 0)
    return fail(path,
                std::string("'") + key + "' must be a non-negative integer, not " + short_dump(v));
  return *n;
}

Status Parser::bounds(const Value& obj, const std::string& path, SchemaNode* n) {
  const bool integer = n->kind == NodeKind::kInteger;
  // Start from the implicit range, then tighten with each keyword.
  n->minimum = integer ? max_safe_integer() : number_limit(opts_.max_fraction_digits);
  n->minimum.negative = true;
  n->maximum = integer ? max_safe_integer() : number_limit(opts_.max_fraction_digits);
  n->exclusive_minimum = n->exclusive_maximum = !integer;
  // Draft 4 spells exclusivity as a boolean next to minimum / maximum.
  const Value* emin = obj.find("exclusiveMinimum");
  const Value* emax = obj.find("exclusiveMaximum");
  const bool draft4_excl_min = emin && emin->is_bool() && emin->as_bool();
  const bool draft4_excl_max = emax && emax->is_bool() && emax->as_bool();
  auto tighten = [&](const char* key, bool lower, bool exclusive) -> Status {
    const Value* b = obj.find(key);
    if (!b || b->is_bool()) return Status::ok();
    if (!b->is_number())
      return fail(path, std::string("'") + key + "' must be a number, not " + short_dump(*b));
    Result<Decimal> d = decimal_of(*b);
    if (!d.is_ok()) return fail(path, std::string("'") + key + "': " + d.status().message());
    Decimal& cur = lower ? n->minimum : n->maximum;
    bool& cur_excl = lower ? n->exclusive_minimum : n->exclusive_maximum;
    const int c = decimal_compare(*d, cur);
    const bool tighter = lower ? (c > 0 || (c == 0 && exclusive && !cur_excl))
                               : (c < 0 || (c == 0 && exclusive && !cur_excl));
    if (tighter) {
      cur = std::move(d).value();
      cur_excl = exclusive;
    }
    return Status::ok();
  };
  LAYA_RETURN_IF_ERROR(tighten("minimum", true, draft4_excl_min));
  LAYA_RETURN_IF_ERROR(tighten("maximum", false, draft4_excl_max));
  LAYA_RETURN_IF_ERROR(tighten("exclusiveMinimum", true, true));
  LAYA_RETURN_IF_ERROR(tighten("exclusiveMaximum", false, true));
  const int c = decimal_compare(n->minimum, n->maximum);
  if (c > 0 || (c == 0 && (n->exclusive_minimum || n->exclusive_maximum)))
    return fail(path, "no number lies between the minimum " + n->minimum.to_string() +
                          " and the maximum " + n->maximum.to_string());
  return Status::ok();
}

Result<int32_t> Parser::node(const Value& v, const std::string& path, int depth) {
  if (!v.is_object()) return fail(path, "a schema must be an object, not " + short_dump(v));
  if (depth > opts_.max_depth)
    return fail(path, "nested deeper than " + std::to_string(opts_.max_depth) + " levels");

  // Keywords outside the subset, before anything else.
  for (const json::Member& m : v.members()) {
    const std::string& k = m.key;
    if (k == "type" || k == "enum" || k == "const" || in(kAnnotations, k) || in(kObjectKeys, k) ||
        in(kArrayKeys, k) || in(kStringKeys, k) || in(kNumberKeys, k))
      continue;
    return fail(path, "unsupported keyword '" + k + "'");
  }

  // The type: a name, or [name, "null"].
  const Value* type = v.find("type");
  std::string type_name;
  bool nullable = false;
  if (type) {
    if (type->is_string()) {
      type_name = type->as_string();
    } else if (type->is_array() && !type->items().empty() && type->items().size() <= 2) {
      for (const Value& t : type->items()) {
        if (!t.is_string()) return fail(path, "'type' entries must be strings");
        if (t.as_string() == "null" && type->items().size() == 2)
          nullable = true;
        else if (type_name.empty())
          type_name = t.as_string();
        else
          return fail(
              path, "a 'type' list may only pair one type with \"null\", not " + short_dump(*type));
      }
      if (type_name.empty()) type_name = "null";
    } else {
      return fail(path, "'type' must be a type name or [type, \"null\"], not " + short_dump(*type));
    }
  }
  const Value* enum_v = v.find("enum");
  const Value* const_v = v.find("const");
  if (type_name.empty() && !enum_v && !const_v) {
    if (!v.find("properties")) return fail(path, "needs a 'type', 'enum', 'const' or 'properties'");
    type_name = "object";
  }

  SchemaNode n;
  n.path = path;
  n.nullable = nullable;
  if (type_name == "object") {
    n.kind = NodeKind::kObject;
  } else if (type_name == "array") {
    n.kind = NodeKind::kArray;
  } else if (type_name == "string") {
    n.kind = NodeKind::kString;
  } else if (type_name == "integer") {
    n.kind = NodeKind::kInteger;
  } else if (type_name == "number") {
    n.kind = NodeKind::kNumber;
  } else if (type_name == "boolean") {
    n.kind = NodeKind::kBoolean;
  } else if (type_name == "null") {
    n.kind = NodeKind::kNull;
  } else if (type_name.empty()) {
    n.kind = NodeKind::kEnum;
  } else {
    return fail(path, "unsupported type '" + type_name + "'");
  }

  // Every keyword must apply to this type.
  for (const json::Member& m : v.members()) {
    const std::string& k = m.key;
    const bool object = in(kObjectKeys, k), array = in(kArrayKeys, k), string = in(kStringKeys, k),
               number = in(kNumberKeys, k);
    if (!object && !array && !string && !number) continue;
    const bool applies = (object && n.kind == NodeKind::kObject) ||
                         (array && n.kind == NodeKind::kArray) ||
                         (string && n.kind == NodeKind::kString) ||
                         (number && (n.kind == NodeKind::kInteger || n.kind == NodeKind::kNumber));
    if (!applies)
      return fail(path, "keyword '" + k + "' does not apply to " +
                            (n.kind == NodeKind::kEnum ? std::string("an enum without a type")
                                                       : "type '" + type_name + "'"));
  }

  const int32_t index = static_cast<int32_t>(out_.nodes.size());
  out_.nodes.emplace_back();

  switch (n.kind) {
    case NodeKind::kObject: {
      const Value* props = v.find("properties");
      if (props && !props->is_object())
        return fail(path, "'properties' must be an object, not " + short_dump(*props));
      if (props) {
        for (const json::Member& m : props->members()) {
          LAYA_ASSIGN_OR_RETURN(int32_t c,
                                node(m.value, child(child(path, "properties"), m.key), depth + 1));
          n.properties.push_back({m.key, c, false});
        }
      }
      if (const Value* req = v.find("required")) {
        if (!req->is_array()) return fail(path, "'required' must be a list of property names");
        for (const Value& r : req->items()) {
          if (!r.is_string()) return fail(path, "'required' entries must be strings");
          auto it = std::find_if(n.properties.begin(), n.properties.end(),
                                 [&](const Property& p) { return p.name == r.as_string(); });
          if (it == n.properties.end())
            return fail(
                path, "required property '" + r.as_string() + "' is not declared in 'properties'");
          it->required = true;
        }
      }
      if (const Value* ap = v.find("additionalProperties")) {
        if (!ap->is_bool())
          return fail(path,
                      "'additionalProperties' must be true or false (a schema is unsupported)");
        n.additional_properties = ap->as_bool();
      }
      break;
    }
    case NodeKind::kArray: {
      const Value* items = v.find("items");
      if (!items) return fail(path, "an array needs 'items'");
      if (!items->is_object())
        return fail(path, "'items' must be one schema (tuple forms are unsupported)");
      LAYA_ASSIGN_OR_RETURN(n.items, node(*items, child(path, "items"), depth + 1));
      if (const Value* c = v.find("minItems")) {
        LAYA_ASSIGN_OR_RETURN(n.min_items, count(*c, path, "minItems"));
      }
      if (const Value* c = v.find("maxItems")) {
        LAYA_ASSIGN_OR_RETURN(n.max_items, count(*c, path, "maxItems"));
      }
      if (n.max_items >= 0 && n.min_items > n.max_items)
        return fail(path, "minItems is above maxItems");
      break;
    }
    case NodeKind::kString: {
      if (const Value* c = v.find("minLength")) {
        LAYA_ASSIGN_OR_RETURN(n.min_length, count(*c, path, "minLength"));
      }
      if (const Value* c = v.find("maxLength")) {
        LAYA_ASSIGN_OR_RETURN(n.max_length, count(*c, path, "maxLength"));
      }
      if (n.max_length >= 0 && n.min_length > n.max_length)
        return fail(path, "minLength is above maxLength");
      break;
    }
    case NodeKind::kInteger:
    case NodeKind::kNumber:
      LAYA_RETURN_IF_ERROR(bounds(v, path, &n));
      break;
    default:
      break;
  }

  // enum / const: the values, each satisfying the rest of the node.
  if (enum_v || const_v) {
    if (enum_v && const_v) return fail(path, "both 'enum' and 'const'");
    std::vector<Value> values;
    if (enum_v) {
      if (!enum_v->is_array() || enum_v->items().empty())
        return fail(path, "'enum' must be a non-empty list");
      values = enum_v->items();
    } else {
      values.push_back(*const_v);
    }
    for (size_t i = 0; i < values.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (json_equal(values[i], values[j]))
          return fail(path, "'enum' lists " + short_dump(values[i]) + " twice");
    if (n.kind != NodeKind::kEnum) {
      out_.nodes[static_cast<size_t>(index)] = n;
      for (const Value& e : values) {
        std::string at = "$";
        const Status st = validate(out_, index, e, at);
        if (!st.is_ok())
          return fail(path, "enum value " + short_dump(e) + " does not satisfy the schema (" +
                                st.message() + ")");
      }
    }
    n = SchemaNode{};
    n.kind = NodeKind::kEnum;
    n.path = path;
    n.values = std::move(values);
  }
  out_.nodes[static_cast<size_t>(index)] = std::move(n);
  return index;
}

void append_index(std::string& path, size_t i) {
  path += '[';
  path += std::to_string(i);
  path += ']';
}

Status invalid(const std::string& path, const std::string& what) {
  return status_error(StatusCode::kInvalidArgument, "%s: %s", path.c_str(), what.c_str());
}

Status validate(const Schema& s, int32_t idx, const Value& v, std::string& path) {
  const SchemaNode& n = s.nodes[static_cast<size_t>(idx)];
  if (n.nullable && v.is_null()) return Status::ok();
  auto expect = [&](Kind k, const char* name) -> Status {
    if (v.kind() != k) return invalid(path, short_dump(v) + " is not " + name);
    return Status::ok();
  };
  switch (n.kind) {
    case NodeKind::kNull:
      return expect(Kind::kNull, "null");
    case NodeKind::kBoolean:
      return expect(Kind::kBool, "a boolean");
    case NodeKind::kEnum:
      for (const Value& e : n.values)
        if (json_equal(e, v)) return Status::ok();
      return invalid(path, short_dump(v) + " is not one of the enum values");
    case NodeKind::kString: {
      LAYA_RETURN_IF_ERROR(expect(Kind::kString, "a string"));
      const int64_t len = utf8_length(v.as_string());
      if (len < n.min_length)
        return invalid(path, "string of " + std::to_string(len) + " characters is shorter than " +
                                 std::to_string(n.min_length));
      if (n.max_length >= 0 && len > n.max_length)
        return invalid(path, "string of " + std::to_string(len) + " characters is longer than " +
                                 std::to_string(n.max_length));
      return Status::ok();
    }
    case NodeKind::kInteger:
    case NodeKind::kNumber: {
      LAYA_RETURN_IF_ERROR(expect(Kind::kNumber, "a number"));
      Result<Decimal> d = decimal_of(v);
      if (!d.is_ok()) return invalid(path, d.status().message());
      if (n.kind == NodeKind::kInteger && !d->is_integer())
        return invalid(path, short_dump(v) + " is not an integer");
      const int lo = decimal_compare(*d, n.minimum), hi = decimal_compare(*d, n.maximum);
      if (lo < 0 || (lo == 0 && n.exclusive_minimum))
        return invalid(path, short_dump(v) + " is below the " +
                                 (n.exclusive_minimum ? "exclusive " : "") + "minimum " +
                                 n.minimum.to_string());
      if (hi > 0 || (hi == 0 && n.exclusive_maximum))
        return invalid(path, short_dump(v) + " is above the " +
                                 (n.exclusive_maximum ? "exclusive " : "") + "maximum " +
                                 n.maximum.to_string());
      return Status::ok();
    }
    case NodeKind::kArray: {
      LAYA_RETURN_IF_ERROR(expect(Kind::kArray, "an array"));
      const int64_t count = static_cast<int64_t>(v.items().size());
      if (count < n.min_items)
        return invalid(path, std::to_string(count) + " items, fewer than minItems " +
                                 std::to_string(n.min_items));
      if (n.max_items >= 0 && count > n.max_items)
        return invalid(path, std::to_string(count) + " items, more than maxItems " +
                                 std::to_string(n.max_items));
      for (size_t i = 0; i < v.items().size(); ++i) {
        const size_t len = path.size();
        append_index(path, i);
        LAYA_RETURN_IF_ERROR(validate(s, n.items, v.items()[i], path));
        path.resize(len);
      }
      return Status::ok();
    }
    case NodeKind::kObject: {
      LAYA_RETURN_IF_ERROR(expect(Kind::kObject, "an object"));
      for (const Property& p : n.properties) {
        const Value* m = v.find(p.name);
        if (!m) {
          if (p.required) return invalid(path, "required property '" + p.name + "' is missing");
          continue;
        }
        const size_t len = path.size();
        path += '.';
        path += p.name;
        LAYA_RETURN_IF_ERROR(validate(s, p.node, *m, path));
        path.resize(len);
      }
      if (!n.additional_properties)
        for (const json::Member& m : v.members())
          if (std::none_of(n.properties.begin(), n.properties.end(),
                           [&](const Property& p) { return p.name == m.key; }))
            return invalid(path, "property '" + m.key + "' is not allowed");
      return Status::ok();
    }
  }
  return Status::ok();
}

Status canonical(const Schema& s, int32_t idx, const Value& v, const SchemaOptions& opts,
                 std::string& path, std::string* out) {
  const SchemaNode& n = s.nodes[static_cast<size_t>(idx)];
  if (n.nullable && v.is_null() && n.kind != NodeKind::kEnum) {
    *out += "null";
    return Status::ok();
  }
  switch (n.kind) {
    case NodeKind::kNull:
      *out += "null";
      return Status::ok();
    case NodeKind::kBoolean:
      *out += v.as_bool() ? "true" : "false";
      return Status::ok();
    case NodeKind::kEnum:
      for (const Value& e : n.values)
        if (json_equal(e, v)) {
          *out += json::dump(e);
          return Status::ok();
        }
      return invalid(path, "not an enum value");
    case NodeKind::kString:
      *out += json::dump(v);
      return Status::ok();
    case NodeKind::kInteger:
    case NodeKind::kNumber: {
      LAYA_ASSIGN_OR_RETURN(Decimal d, decimal_of(v));
      if (d.fraction_digits() > opts.max_fraction_digits)
        return invalid(path, short_dump(v) + " needs more than " +
                                 std::to_string(opts.max_fraction_digits) + " fraction digits");
      *out += d.to_string();
      return Status::ok();
    }
    case NodeKind::kArray: {
      *out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += ", ";
        const size_t len = path.size();
        append_index(path, i);
        LAYA_RETURN_IF_ERROR(canonical(s, n.items, v.items()[i], opts, path, out));
        path.resize(len);
      }
      *out += ']';
      return Status::ok();
    }
    case NodeKind::kObject: {
      for (const json::Member& m : v.members())
        if (std::none_of(n.properties.begin(), n.properties.end(),
                         [&](const Property& p) { return p.name == m.key; }))
          return invalid(path, "property '" + m.key + "' is outside 'properties'");
      *out += '{';
      bool first = true;
      for (const Property& p : n.properties) {
        const Value* m = v.find(p.name);
        if (!m) continue;
        if (!first) *out += ", ";
        first = false;
        *out += json::dump(Value::string(p.name));
        *out += ": ";
        const size_t len = path.size();
        path += '.';
        path += p.name;
        LAYA_RETURN_IF_ERROR(canonical(s, p.node, *m, opts, path, out));
        path.resize(len);
      }
      *out += '}';
      return Status::ok();
    }
  }
  return Status::ok();
}

}  // namespace

Result<Decimal> decimal_of(const Value& number) {
  if (!number.is_number()) return Status(StatusCode::kInvalidArgument, "not a number");
  return decimal_parse(number.as_string());
}

bool json_equal(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return a.as_bool() == b.as_bool();
    case Kind::kString:
      return a.as_string() == b.as_string();
    case Kind::kNumber: {
      Result<Decimal> da = decimal_of(a), db = decimal_of(b);
      if (!da.is_ok() || !db.is_ok()) return a.as_string() == b.as_string();
      return decimal_compare(*da, *db) == 0;
    }
    case Kind::kArray:
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!json_equal(a.items()[i], b.items()[i])) return false;
      return true;
    case Kind::kObject:
      if (a.members().size() != b.members().size()) return false;
      for (const json::Member& m : a.members()) {
        const Value* o = b.find(m.key);
        if (!o || !json_equal(m.value, *o)) return false;
      }
      return true;
  }
  return false;
}

Result<Schema> schema_parse(const Value& schema, const SchemaOptions& opts) {
  if (opts.max_fraction_digits < 0 || opts.max_fraction_digits > 12)
    return Status(StatusCode::kInvalidArgument, "max_fraction_digits must be in 0..12");
  Parser p(opts);
  LAYA_ASSIGN_OR_RETURN(int32_t root, p.node(schema, "", 0));
  Schema s = p.take();
  s.root = root;
  return s;
}

Status schema_validate(const Schema& schema, const Value& instance) {
  if (schema.nodes.empty()) return Status(StatusCode::kInvalidArgument, "empty schema");
  std::string path = "$";
  return validate(schema, schema.root, instance, path);
}

Result<std::string> schema_canonical_text(const Schema& schema, const Value& instance,
                                          const SchemaOptions& opts) {
  LAYA_RETURN_IF_ERROR(schema_validate(schema, instance));
  std::string path = "$", out;
  LAYA_RETURN_IF_ERROR(canonical(schema, schema.root, instance, opts, path, &out));
  return out;
}

}  // namespace laya::grammar
