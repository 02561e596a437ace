// Python `str` semantics on code points, for the parts of the Laya SDK whose output depends on them.
//
// The upstream SDK is Python: its router reads a state with `str.isalpha`, `str.lower`, `re`'s `\w`
// and friends, and its error messages quote user values with `%r`. Reproducing its answers means
// reproducing those exactly, for every code point, not just ASCII. The per-code-point properties
// come from CPython 3.11's Unicode database (14.0.0), generated into router_tables.inc by
// tools/reference/make_router_tables.py, so they do not depend on the host's libc or ICU.
//
// Text is UTF-32 (`std::u32string`): Python indexes and measures strings in code points, and the
// router's budgets (4000 characters, 60-character excerpts) are in code points too. Input UTF-8 is
// assumed valid (runtime/text/json validates every string it parses).
//
// Not for the execute path: these allocate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/json.h"

namespace laya::py {

// ---- UTF-8 <-> code points ----
std::u32string decode(std::string_view utf8);  // valid UTF-8 in; invalid bytes become U+FFFD
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);

// ---- one code point, as `chr(c).isalpha()` etc. answer ----
bool is_alpha(char32_t c);
bool is_upper(char32_t c);       // chr(c).isupper()
bool is_lower(char32_t c);       // chr(c).islower()
bool is_decimal(char32_t c);     // str.isdecimal; re's \d
bool is_numeric(char32_t c);     // str.isnumeric (includes isdigit and isdecimal)
bool is_space(char32_t c);       // str.isspace; what str.split() / str.strip() remove
bool is_printable(char32_t c);   // str.isprintable; what repr() leaves unescaped
bool is_combining(char32_t c);   // unicodedata.combining(c) != 0
bool is_unassigned(char32_t c);  // unicodedata.category(c) == "Cn"
// re's \w on str patterns: alphanumeric (isalpha / isdecimal / isdigit / isnumeric) or '_'.
bool is_word(char32_t c);
bool is_alnum(char32_t c);  // \w without '_': re's [^\W_]
// re's [^\W\d_]: a letter or a non-decimal numeric ("letter-like numerals").
bool is_word_letter(char32_t c);

// ---- whole strings ----
bool str_isupper(std::u32string_view s);  // at least one cased character, none lower / title
// str.lower(): full lowercase mapping (U+0130 -> "i\u0307") with the final-sigma rule.
std::u32string lower(std::u32string_view s);
// str.strip() / str.split() with no argument (Unicode whitespace).
std::u32string_view strip(std::u32string_view s);
std::vector<std::u32string_view> split_ws(std::u32string_view s);

// ---- formatting ----
// repr() of a str given as UTF-8: quotes chosen and characters escaped as CPython does.
std::string repr(std::string_view utf8);
// repr() / str() of the Python object json.loads builds for `v` (dict, list, str, int, float,
// True / False / None). Floats print as Python's repr (inf, nan: "inf", "nan").
std::string repr(const json::Value& v);
std::string str(const json::Value& v);
// type(x).__name__ of that object: "str", "int", "float", "bool", "list", "dict", "NoneType".
const char* type_name(const json::Value& v);
// repr(float): python_float_repr but "inf" / "-inf" / "nan" for the non-finite values.
std::string float_repr(double v);

// round(x, ndigits) for a float: the exact binary value rounded half-to-even at `ndigits`
// decimals, read back as the nearest double (CPython's float.__round__). Non-finite x unchanged.
double round(double x, int ndigits);
// round(x) for a float: the nearest integer, ties to even (as a double).
double round_int(double x);
// "%.*f" % (ndigits, x): the exact binary value rounded half-to-even.
std::string format_fixed(double x, int ndigits);

}  // namespace laya::py
