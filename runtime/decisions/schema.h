// Schema requests: a JSON schema in, Laya questions planned from it, typed values out. The upstream
// SDK's `Agent.decide(state, schema)` (laya/structured.py, laya 0.4.15), for JSON schemas.
//
// The mapping is upstream's documented subset; each top-level property becomes one question:
//   enum / const (at most 32 values)   -> choice over str(value) labels ("null" for null); an enum
//                                         of exactly true and false -> noul
//   boolean                            -> noul
//   integer / number with integer minimum and maximum (at most 10 levels) -> score, level i = min + i
//   $ref into $defs / definitions, one-item allOf, Optional[...] (anyOf / oneOf with one non-null
//   branch), "type": [T, "null"]       -> unwrapped
//   string, array, object, unions      -> refused, naming the path ("properties.<name>: ...")
// At most 32 properties. Instructions are the property's description, else "What is `name`?",
// "Is `name` true?", "Score `name` from lo to hi".
//
// Errors are kRequestUnprocessable (upstream raises SchemaError, a ValueError) with its message.
#pragma once

#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/decisions/request.h"

namespace laya::decision {

inline constexpr int kSchemaMaxProperties = 32;
inline constexpr int kSchemaMaxOptions = 32;
inline constexpr int kSchemaMaxScoreLevels = 10;

// plan_from_json_schema(schema): one field per property, in schema order.
Result<std::vector<SchemaField>> plan_schema(const json::Value& schema);

// dataclasses.asdict(decide(..., return_details=True)) for one result of Agent.predict:
//   {"values", "confidence", "probabilities", "answers", "usage", "routing", "answer_confidence"}
// values: the schema-shaped answer (the enum member, min + level, a boolean; null for an answer
// the min_confidence gate flagged).
json::Value decision_details(const std::vector<SchemaField>& fields, const json::Value& result);

}  // namespace laya::decision
