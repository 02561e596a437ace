#include "runtime/decisions/grammar/decimal.h"

#include <algorithm>

namespace laya::grammar {

namespace {

constexpr int64_t kMaxExponent = 100000;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Adds one to a digit string (no leading zeros).
std::string increment(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

}  // namespace

std::string Decimal::to_string() const {
  if (digits.empty()) return "0";
  std::string out = negative ? "-" : "";
  if (exp >= 0) {
    out += digits;
    out.append(static_cast<size_t>(exp), '0');
    return out;
  }
  const int64_t n = static_cast<int64_t>(digits.size());
  const int64_t frac = -exp;
  if (frac >= n) {
    out += "0.";
    out.append(static_cast<size_t>(frac - n), '0');
    out += digits;
  } else {
    out.append(digits, 0, static_cast<size_t>(n - frac));
    out += '.';
    out.append(digits, static_cast<size_t>(n - frac), std::string::npos);
  }
  return out;
}

int64_t Decimal::integer_digits() const {
  if (digits.empty()) return 0;
  return std::max<int64_t>(0, static_cast<int64_t>(digits.size()) + exp);
}

Result<Decimal> decimal_parse(std::string_view text) {
  auto bad = [&]() {
    return status_error(StatusCode::kInvalidArgument, "'%.*s' is not a finite JSON number",
                        static_cast<int>(std::min<size_t>(text.size(), 64)), text.data());
  };
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string mant;
  int64_t exp = 0;
  const size_t int_start = i;
  while (i < text.size() && is_digit(text[i])) mant += text[i++];
  if (i == int_start) return bad();
  if (i < text.size() && text[i] == '.') {
    ++i;
    const size_t frac_start = i;
    while (i < text.size() && is_digit(text[i])) {
      mant += text[i++];
      --exp;
    }
    if (i == frac_start) return bad();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) eneg = text[i++] == '-';
    const size_t exp_start = i;
    int64_t e = 0;
    while (i < text.size() && is_digit(text[i])) {
      e = std::min<int64_t>(e * 10 + (text[i++] - '0'), 10 * kMaxExponent);
    }
    if (i == exp_start) return bad();
    exp += eneg ? -e : e;
  }
  if (i != text.size()) return bad();
  // Normalize: strip leading zeros, then trailing zeros into the exponent.
  size_t lead = 0;
  while (lead < mant.size() && mant[lead] == '0') ++lead;
  mant.erase(0, lead);
  while (!mant.empty() && mant.back() == '0') {
    mant.pop_back();
    ++exp;
  }
  if (mant.empty()) return Decimal{};
  if (exp > kMaxExponent || exp < -kMaxExponent)
    return status_error(StatusCode::kInvalidArgument,
                        "'%.*s': exponent out of the supported range (+-%lld)",
                        static_cast<int>(std::min<size_t>(text.size(), 64)), text.data(),
                        static_cast<long long>(kMaxExponent));
  d.digits = std::move(mant);
  d.exp = exp;
  return d;
}

int decimal_compare(const Decimal& a, const Decimal& b) {
  const int sa = a.is_zero() ? 0 : (a.negative ? -1 : 1);
  const int sb = b.is_zero() ? 0 : (b.negative ? -1 : 1);
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  // Same sign: compare magnitudes by the position of the leading digit, then digit by digit.
  const int64_t ta = static_cast<int64_t>(a.digits.size()) + a.exp;
  const int64_t tb = static_cast<int64_t>(b.digits.size()) + b.exp;
  int mag = 0;
  if (ta != tb) {
    mag = ta < tb ? -1 : 1;
  } else {
    const size_t n = std::max(a.digits.size(), b.digits.size());
    for (size_t i = 0; i < n && mag == 0; ++i) {
      const char ca = i < a.digits.size() ? a.digits[i] : '0';
      const char cb = i < b.digits.size() ? b.digits[i] : '0';
      if (ca != cb) mag = ca < cb ? -1 : 1;
    }
  }
  return sa > 0 ? mag : -mag;
}

bool decimal_scaled_abs(const Decimal& x, int64_t shift, bool round_up, int64_t max_digits,
                        std::string* out) {
  if (x.is_zero()) {
    *out = "0";
    return true;
  }
  const int64_t e = x.exp + shift;
  const int64_t n = static_cast<int64_t>(x.digits.size());
  std::string r;
  if (e >= 0) {
    if (n + e > max_digits) return false;
    r = x.digits;
    r.append(static_cast<size_t>(e), '0');
  } else {
    // Drop the last -e digits; what is dropped is non-zero (digits has no trailing zeros).
    const int64_t keep = n + e;
    r = keep > 0 ? x.digits.substr(0, static_cast<size_t>(keep)) : std::string();
    if (r.empty()) r = "0";
    if (round_up) r = r == "0" ? "1" : increment(r);
    if (static_cast<int64_t>(r.size()) > max_digits) return false;
  }
  *out = std::move(r);
  return true;
}

}  // namespace laya::grammar
