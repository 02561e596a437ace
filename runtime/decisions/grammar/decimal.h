// Exact decimal numbers for JSON schema bounds and number validation.
//
// A JSON number's text (or a json::Value number, which keeps Python's repr of a double or the
// exact digits of an integer) is read as the exact decimal it spells: "0.1" is one tenth, not the
// double nearest to it. Schema bounds, the number automaton (runtime/decisions/grammar/automaton.h) and
// instance validation (runtime/decisions/grammar/schema.h) all compare these exact values, so "maximum: 0.1"
// admits the text "0.1" and nothing above it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace laya::grammar {

// value = (negative ? -1 : 1) * digits * 10^exp, digits without leading or trailing zeros ("" is
// zero, which is never negative).
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t exp = 0;

  bool is_zero() const { return digits.empty(); }
  bool is_integer() const { return digits.empty() || exp >= 0; }
  // The canonical text this runtime writes: "-12.5", "0", "0.001"; no exponent, no trailing
  // fraction zeros. Very large exponents make long strings: callers bound them first.
  std::string to_string() const;
  // Number of digits left of the decimal point (0 for |value| < 1).
  int64_t integer_digits() const;
  // Number of digits right of the decimal point (0 for integers).
  int64_t fraction_digits() const { return exp < 0 ? -exp : 0; }
};

// Parses a JSON number literal ("-0.5", "1e-05", "12E+3"); also Python's "inf" / "nan" spellings
// are refused. kInvalidArgument naming the text otherwise. The exponent is limited to +-100000.
Result<Decimal> decimal_parse(std::string_view text);

// Three-way comparison of the exact values: -1, 0, 1.
int decimal_compare(const Decimal& a, const Decimal& b);

// |x| * 10^shift rounded down (floor) or up (ceil), as a digit string without leading zeros ("0"
// for zero). Returns false (and leaves *out alone) when the result has more than max_digits digits.
bool decimal_scaled_abs(const Decimal& x, int64_t shift, bool round_up, int64_t max_digits,
                        std::string* out);

}  // namespace laya::grammar
