// The JSON schema subset that constrains decoder decisions, its validation, and the one canonical
// text of every instance.
//
// Supported (anything else is refused with a message naming the keyword and its path):
//   type          "object" | "array" | "string" | "integer" | "number" | "boolean" | "null",
//                 or a pair [T, "null"] (nullable)
//   object        properties (in order: that is the key order of the text), required (names of
//                 declared properties), additionalProperties (a boolean; extra keys are never
//                 generated either way)
//   array         items (one schema), minItems, maxItems
//   string        minLength, maxLength (in code points, as JSON Schema counts them)
//   integer / number   minimum, maximum, exclusiveMinimum, exclusiveMaximum (a number, or draft 4's
//                 boolean that makes minimum / maximum exclusive); bounds are exact decimals
//   enum, const   any JSON values (each must satisfy the node's other keywords)
//   annotations   title, description, default, examples, $schema, $id, $comment, deprecated,
//                 readOnly, writeOnly (ignored)
// A node needs a `type`, or an `enum` / `const`, or `properties` (an object). Keywords that do not
// apply to the node's type (maxLength on an integer, ...) are refused too: they would be ignored by
// a validator and are most likely a mistake in the schema.
//
// Canonical text (what the grammar lets a model write; runtime/decisions/grammar/automaton.h): Python's
// json.dumps layout on one line: ", " between items and members, ": " after keys, no other
// whitespace; object keys in `properties` order (absent optional properties are skipped, never
// keys outside `properties`); strings escaped as json.dumps(ensure_ascii=False) does (only '"',
// '\\' and control characters: \b \t \n \f \r, others \u00XX in lowercase hex); integers as
// their digits ("-0" is "0"); numbers as exact decimals without exponent or trailing fraction
// zeros ("0.5", "2", "-0.125") with at most `max_fraction_digits` fraction digits; enum / const
// members as json.dumps of the schema's own value. Numbers without bounds are limited to
// +-(2^53 - 1) (integers) and magnitudes below 10^(15 - max_fraction_digits) (numbers: 10^9 by
// default), where every text has at most 15 significant digits and so reads back exactly as a
// double (a longer one, 589749801984983.419, reads as 589749801984983.4 and can cross an
// exclusive bound). Explicit bounds are taken as given: a schema whose range reaches past
// 10^(15 - max_fraction_digits) admits such texts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/decisions/grammar/decimal.h"
#include "runtime/text/json.h"

namespace laya::grammar {

enum class NodeKind : uint8_t {
  kObject,
  kArray,
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kNull,
  kEnum
};

struct Property {
  std::string name;
  int32_t node = -1;  // index into Schema::nodes
  bool required = false;
};

struct SchemaNode {
  NodeKind kind = NodeKind::kNull;
  bool nullable = false;  // "type": [T, "null"]: null is also allowed
  std::string path;       // in the schema, for messages: "properties.action.items"
  // kObject, in schema order.
  std::vector<Property> properties;
  bool additional_properties = true;
  // kArray.
  int32_t items = -1;
  int64_t min_items = 0;
  int64_t max_items = -1;  // -1: unbounded
  // kString (code points).
  int64_t min_length = 0;
  int64_t max_length = -1;  // -1: unbounded
  // kInteger / kNumber: the effective bounds (always set: implicit ones fill a missing side).
  Decimal minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // kEnum: the allowed values, in schema order (booleans are kBoolean, not an enum).
  std::vector<json::Value> values;
};

struct Schema {
  std::vector<SchemaNode> nodes;
  int32_t root = 0;
};

struct SchemaOptions {
  int32_t max_fraction_digits = 6;  // number nodes: digits after the decimal point (0..12)
  int32_t max_depth = 32;           // nesting of objects / arrays
};

// Reads a schema (kInvalidArgument naming the keyword and its path: "properties.level:
// unsupported keyword 'multipleOf'").
Result<Schema> schema_parse(const json::Value& schema, const SchemaOptions& opts = {});

// Checks an instance against the schema: what a JSON Schema validator says for this subset (keys
// outside `properties` pass unless additionalProperties is false, although the grammar never
// writes them). kInvalidArgument naming the instance path: "$.value: 1.5 is above the maximum 1".
Status schema_validate(const Schema& schema, const json::Value& instance);

// The canonical text of a valid instance (see the top of this file). kInvalidArgument when the
// instance has no canonical text: it fails validation, has keys outside `properties`, or a number
// needs more fraction digits than the options allow.
Result<std::string> schema_canonical_text(const Schema& schema, const json::Value& instance,
                                          const SchemaOptions& opts = {});

// The exact decimal of a JSON number value (its integer digits or Python repr).
Result<Decimal> decimal_of(const json::Value& number);

// JSON equality as enum / const compare: numbers by exact value (1 == 1.0), objects by key set.
bool json_equal(const json::Value& a, const json::Value& b);

}  // namespace laya::grammar
