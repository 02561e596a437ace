// Command-line parsing for the tools (laya-run, laya-make-tiny): one definition of the rules every
// option follows, so no single option can bend them.
//
//  - "--name value" and "--name=value". A flag takes no value ("--profile=1" is an error). "-h" is
//    "--help". An argument that does not start with "--" is positional.
//  - An option may be given once; a second occurrence is an error, never a silent override.
//    Repeatable options (declared so) collect every occurrence in order.
//  - An integer is a whole decimal number inside the option's inclusive [lo, hi]. "", "1.5",
//    "12abc", a value that overflows int64, and a value outside the range are errors naming the
//    option, the range and the text given. No value doubles as "unset": an absent option leaves the
//    caller's default untouched.
//  - A number is a finite decimal ("0.7", "1", "1e-3") inside the option's range: [lo, hi], or
//    (lo, hi] when declared so. "", "nan", "inf", "0x1p3", "1.5x" and values outside are errors
//    naming the option, the range and the text given.
//  - A choice is one of the listed words.
//  - Every error is one line for the user; the tool prints it with its usage and exits with 2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace laya::tools {

class ArgParser {
 public:
  // Declarations. Each `out` is written by parse() only when the option is given, and must outlive
  // parse().
  void flag(const std::string& name, bool* out);
  void integer(const std::string& name, int64_t lo, int64_t hi, int64_t* out);
  void number(const std::string& name, double lo, double hi, double* out, bool lo_open = false);
  void text(const std::string& name, std::string* out);
  void choice(const std::string& name, std::vector<std::string> choices, std::string* out);
  void repeated(const std::string& name, std::vector<std::string>* out);

  // Parses argv[first, argc); positional arguments are appended to `positional`. False on the
  // first bad argument, with the message in error().
  bool parse(int argc, const char* const* argv, int first, std::vector<std::string>* positional);
  const std::string& error() const { return error_; }

 private:
  enum class Kind { kFlag, kInteger, kNumber, kText, kChoice, kRepeated };
  struct Option {
    std::string name;
    Kind kind;
    void* out;
    int64_t lo = 0, hi = 0;
    std::vector<std::string> choices;
    double lo_real = 0, hi_real = 0;  // kNumber's range
    bool lo_open = false;
    bool seen = false;
  };
  bool fail(std::string message);
  std::vector<Option> options_;
  std::string error_;
};

// `text` as a decimal integer in [lo, hi]. On failure returns false and sets `*err` to
// "<what> must be an integer in [lo, hi], got '<text>'" (or "... >= lo" when hi is INT64_MAX).
bool parse_integer(std::string_view text, int64_t lo, int64_t hi, const std::string& what,
                   int64_t* out, std::string* err);

// `text` as a finite decimal number in [lo, hi] ((lo, hi] when `lo_open`). On failure returns
// false and sets `*err` to "<what> must be a number in [lo, hi], got '<text>'".
bool parse_number(std::string_view text, double lo, double hi, bool lo_open,
                  const std::string& what, double* out, std::string* err);

// "NAME=VALUE" split at the first '='. False when there is no '=' or NAME is empty.
bool split_assignment(const std::string& text, std::string* name, std::string* value);

// "a,b,c" -> {a, b, c}. False with `*err` naming `what` when the list is empty, or an item is
// empty or repeated.
bool split_list(const std::string& text, const std::string& what, std::vector<std::string>* out,
                std::string* err);

}  // namespace laya::tools
