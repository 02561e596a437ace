#include "runtime/decisions/grammar/automaton.h"

#include <algorithm>
#include <array>
#include <climits>
#include <deque>
#include <unordered_map>

namespace laya::grammar {

namespace {

struct Edge {
  uint8_t lo, hi;
  int32_t to;
};

struct Frag {
  int32_t in = -1, out = -1;  // `out` has no edges of its own when the fragment is made
};

struct Nfa {
  std::vector<std::vector<Edge>> edges;
  std::vector<std::vector<int32_t>> eps;
  std::vector<int32_t> slot;        // the slot this state lies in (its start and interior)
  std::vector<int32_t> slot_start;  // the slot this state starts
  std::vector<int32_t> room;        // string character states: characters left (-1: other)
};

std::string nines(size_t n) {
  return std::string(n, '9');
}

// Digit strings without leading zeros ("0" is zero).
int compare_digits(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : (a > b ? 1 : 0);
}

std::string add_one(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

// s - 1 for s >= 1.
std::string sub_one(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') {
      --s[i];
      break;
    }
    s[i] = '9';
  }
  const size_t nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

std::string pad(const std::string& s, size_t n) {
  return std::string(n - s.size(), '0') + s;
}

Decimal negated(Decimal d) {
  if (!d.is_zero()) d.negative = !d.negative;
  return d;
}

}  // namespace

std::string slot_path_name(const SlotPath& path, std::span<const int64_t> items) {
  std::string out;
  size_t next = 0;
  for (const SlotStep& st : path) {
    if (st.index == kKey) {
      if (!out.empty()) out += '.';
      out += st.key;
    } else if (st.index == kAnyItem) {
      out += next < items.size() ? "[" + std::to_string(items[next++]) + "]" : "[]";
    } else {
      out += "[" + std::to_string(st.index) + "]";
    }
  }
  return out.empty() ? "$" : out;
}

namespace {

class NfaBuilder {
 public:
  NfaBuilder(const Schema& s, const AutomatonOptions& o) : schema_(s), opts_(o) {}

  Result<Frag> value(int32_t node, const SlotPath& path);
  Nfa nfa;
  std::vector<Slot> slots;

 private:
  int32_t add() {
    nfa.edges.emplace_back();
    nfa.eps.emplace_back();
    nfa.slot.push_back(-1);
    nfa.slot_start.push_back(-1);
    nfa.room.push_back(-1);
    return static_cast<int32_t>(nfa.edges.size()) - 1;
  }
  bool full() const { return nfa.edges.size() > static_cast<size_t>(opts_.max_nfa_states); }
  Status too_large(const SchemaNode& n) const {
    return status_error(StatusCode::kInvalidArgument,
                        "%s: the schema needs more than %d automaton states (lower maxLength or "
                        "maxItems)",
                        n.path.empty() ? "schema root" : n.path.c_str(), opts_.max_nfa_states);
  }
  void edge(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
    nfa.edges[static_cast<size_t>(from)].push_back({lo, hi, to});
  }
  void eps(int32_t from, int32_t to) { nfa.eps[static_cast<size_t>(from)].push_back(to); }
  Frag literal(std::string_view text);
  void char_edges(int32_t from, int32_t to);
  Result<Frag> string(const SchemaNode& n);
  Result<Frag> number(const SchemaNode& n);
  bool magnitudes(int32_t from, int32_t to, const Decimal& a, bool ex_a, const Decimal& b,
                  bool ex_b, int32_t max_fraction);
  Result<Frag> array(const SchemaNode& n, const SlotPath& path);
  Result<Frag> object(const SchemaNode& n, const SlotPath& path);
  Frag slot(const SchemaNode& n, int32_t node, const SlotPath& path);

  const Schema& schema_;
  const AutomatonOptions& opts_;
};

Frag NfaBuilder::literal(std::string_view text) {
  Frag f;
  f.in = add();
  int32_t cur = f.in;
  for (char c : text) {
    const int32_t nx = add();
    edge(cur, static_cast<uint8_t>(c), static_cast<uint8_t>(c), nx);
    cur = nx;
  }
  f.out = cur;
  return f;
}

// One string character (canonical JSON escaping, valid UTF-8) from `from` to `to`.
void NfaBuilder::char_edges(int32_t from, int32_t to) {
  const int32_t a = add(), b2 = add(), be0 = add(), bed = add(), d = add(), d0 = add(), d4 = add();
  edge(a, 0x80, 0xBF, to);
  edge(b2, 0x80, 0xBF, a);
  edge(be0, 0xA0, 0xBF, a);
  edge(bed, 0x80, 0x9F, a);
  edge(d, 0x80, 0xBF, b2);
  edge(d0, 0x90, 0xBF, b2);
  edge(d4, 0x80, 0x8F, b2);
  edge(from, 0x20, 0x21, to);
  edge(from, 0x23, 0x5B, to);
  edge(from, 0x5D, 0x7F, to);
  edge(from, 0xC2, 0xDF, a);
  edge(from, 0xE0, 0xE0, be0);
  edge(from, 0xE1, 0xEC, b2);
  edge(from, 0xED, 0xED, bed);
  edge(from, 0xEE, 0xEF, b2);
  edge(from, 0xF0, 0xF0, d0);
  edge(from, 0xF1, 0xF3, d);
  edge(from, 0xF4, 0xF4, d4);
  // Escapes: the short forms, and \u00XX for the other control characters.
  const int32_t e = add(), u = add(), u0 = add(), u00 = add(), u000 = add(), u001 = add();
  edge(from, '\\', '\\', e);
  for (char c : {'"', '\\', 'b', 'f', 'n', 'r', 't'})
    edge(e, static_cast<uint8_t>(c), static_cast<uint8_t>(c), to);
  edge(e, 'u', 'u', u);
  edge(u, '0', '0', u0);
  edge(u0, '0', '0', u00);
  edge(u00, '0', '0', u000);
  edge(u00, '1', '1', u001);
  edge(u000, '0', '7', to);
  edge(u000, 'b', 'b', to);
  edge(u000, 'e', 'f', to);
  edge(u001, '0', '9', to);
  edge(u001, 'a', 'f', to);
}

Result<Frag> NfaBuilder::string(const SchemaNode& n) {
  const int64_t positions = n.max_length >= 0 ? n.max_length : n.min_length;
  if (positions > opts_.max_nfa_states) return too_large(n);
  Frag f;
  f.in = add();
  f.out = add();
  std::vector<int32_t> c(static_cast<size_t>(positions) + 1);
  for (size_t i = 0; i < c.size(); ++i) {
    c[i] = add();
    nfa.room[static_cast<size_t>(c[i])] =
        n.max_length >= 0 ? static_cast<int32_t>(positions - static_cast<int64_t>(i)) : INT32_MAX;
  }
  edge(f.in, '"', '"', c[0]);
  for (int64_t i = 0; i <= positions; ++i) {
    const int32_t at = c[static_cast<size_t>(i)];
    if (i >= n.min_length) edge(at, '"', '"', f.out);
    if (i < positions)
      char_edges(at, c[static_cast<size_t>(i) + 1]);
    else if (n.max_length < 0)
      char_edges(at, at);
    if (full()) return too_large(n);
  }
  return f;
}

// Texts of magnitudes m in [a, b] (exclusive ends as flagged), k integer digits and f fraction
// digits for every k, f (see automaton.h). Returns whether any text exists.
bool NfaBuilder::magnitudes(int32_t from, int32_t to, const Decimal& a, bool ex_a, const Decimal& b,
                            bool ex_b, int32_t max_fraction) {
  bool any = false;
  const int64_t max_k = std::max<int64_t>(1, b.integer_digits());
  for (int64_t k = 1; k <= max_k; ++k) {
    for (int32_t f = 0; f <= max_fraction; ++f) {
      const int64_t n = k + f;
      std::string lo, hi;
      // lo = ex_a ? floor(a 10^f) + 1 : ceil(a 10^f); more than n digits: no text here.
      if (!decimal_scaled_abs(a, f, !ex_a, n + 1, &lo)) continue;
      if (ex_a) lo = add_one(lo);
      // hi = ex_b ? ceil(b 10^f) - 1 : floor(b 10^f); more than n digits: every n-digit text.
      if (!decimal_scaled_abs(b, f, ex_b, n, &hi)) {
        hi = nines(static_cast<size_t>(n));
      } else if (ex_b) {
        if (hi == "0") continue;
        hi = sub_one(hi);
      }
      const std::string shape_lo =
          k == 1 ? "0" : "1" + std::string(static_cast<size_t>(n - 1), '0');
      const std::string shape_hi = nines(static_cast<size_t>(n));
      if (compare_digits(lo, shape_lo) < 0) lo = shape_lo;
      if (compare_digits(hi, shape_hi) > 0) hi = shape_hi;
      if (compare_digits(lo, hi) > 0) continue;
      if (f > 0 && lo == hi && lo.back() == '0') continue;  // the only text ends in a zero
      any = true;
      lo = pad(lo, static_cast<size_t>(n));
      hi = pad(hi, static_cast<size_t>(n));
      // Digit walk with "equal to lo so far" / "equal to hi so far" flags; '.' after k digits.
      const int64_t len = n + (f > 0 ? 1 : 0);
      std::unordered_map<int64_t, int32_t> states;
      auto state_of = [&](int64_t j, bool tl, bool th) {
        const int64_t key = j * 4 + (tl ? 2 : 0) + (th ? 1 : 0);
        auto it = states.find(key);
        if (it != states.end()) return std::make_pair(it->second, false);
        const int32_t s = add();
        states.emplace(key, s);
        return std::make_pair(s, true);
      };
      struct Item {
        int64_t j;
        bool tl, th;
        int32_t s;
      };
      std::vector<Item> work;
      const int32_t s0 = state_of(0, true, true).first;
      eps(from, s0);
      work.push_back({0, true, true, s0});
      while (!work.empty()) {
        const Item it = work.back();
        work.pop_back();
        if (it.j == len) {
          eps(it.s, to);
          continue;
        }
        if (f > 0 && it.j == k) {
          auto [nx, fresh] = state_of(it.j + 1, it.tl, it.th);
          edge(it.s, '.', '.', nx);
          if (fresh) work.push_back({it.j + 1, it.tl, it.th, nx});
          continue;
        }
        const size_t i = static_cast<size_t>(it.j > k ? it.j - 1 : it.j);
        char dlo = it.tl ? lo[i] : '0';
        const char dhi = it.th ? hi[i] : '9';
        if (f > 0 && i + 1 == static_cast<size_t>(n)) dlo = std::max(dlo, '1');
        for (char d = dlo; d <= dhi; ++d) {
          const bool tl = it.tl && d == lo[i], th = it.th && d == hi[i];
          auto [nx, fresh] = state_of(it.j + 1, tl, th);
          edge(it.s, static_cast<uint8_t>(d), static_cast<uint8_t>(d), nx);
          if (fresh) work.push_back({it.j + 1, tl, th, nx});
        }
      }
    }
  }
  return any;
}

Result<Frag> NfaBuilder::number(const SchemaNode& n) {
  const int32_t frac = n.kind == NodeKind::kInteger ? 0 : opts_.schema.max_fraction_digits;
  Frag f;
  f.in = add();
  f.out = add();
  const Decimal zero;
  const Decimal &lo = n.minimum, &hi = n.maximum;
  bool any = false;
  const int hi_sign = decimal_compare(hi, zero), lo_sign = decimal_compare(lo, zero);
  // Values >= 0.
  if (hi_sign > 0 || (hi_sign == 0 && !n.exclusive_maximum)) {
    const bool from_lo = lo_sign >= 0;
    any |= magnitudes(f.in, f.out, from_lo ? lo : zero, from_lo && n.exclusive_minimum, hi,
                      n.exclusive_maximum, frac);
  }
  // Values < 0: '-' and a magnitude m > 0 in [max(-hi, 0), -lo].
  if (lo_sign < 0) {
    const int32_t minus = add();
    edge(f.in, '-', '-', minus);
    const bool from_hi = hi_sign < 0;
    any |= magnitudes(minus, f.out, from_hi ? negated(hi) : zero,
                      from_hi ? n.exclusive_maximum : true, negated(lo), n.exclusive_minimum, frac);
  }
  if (full()) return too_large(n);
  if (!any)
    return status_error(StatusCode::kInvalidArgument,
                        "%s: no %s with at most %d fraction digits lies between %s and %s",
                        n.path.empty() ? "schema root" : n.path.c_str(),
                        n.kind == NodeKind::kInteger ? "integer" : "number", frac,
                        lo.to_string().c_str(), hi.to_string().c_str());
  return f;
}

Result<Frag> NfaBuilder::array(const SchemaNode& n, const SlotPath& path) {
  Frag f;
  f.in = add();
  f.out = add();
  const int32_t open = add();
  edge(f.in, '[', '[', open);
  auto item_name = [&](int64_t k) {
    SlotPath p = path;
    p.push_back({"", k < 0 ? kAnyItem : k});
    return p;
  };
  // after[k]: k items written.
  std::vector<int32_t> after{open};
  const int64_t unrolled = n.max_items >= 0 ? n.max_items : n.min_items;
  for (int64_t k = 0; k < unrolled; ++k) {
    LAYA_ASSIGN_OR_RETURN(Frag item, value(n.items, item_name(k)));
    if (k == 0) {
      eps(open, item.in);
    } else {
      const Frag sep = literal(", ");
      eps(after.back(), sep.in);
      eps(sep.out, item.in);
    }
    after.push_back(item.out);
    if (full()) return too_large(n);
  }
  for (int64_t k = n.min_items; k <= unrolled; ++k)
    edge(after[static_cast<size_t>(k)], ']', ']', f.out);
  if (n.max_items < 0) {
    // Any number of further items: one item fragment in a loop.
    LAYA_ASSIGN_OR_RETURN(Frag item, value(n.items, item_name(-1)));
    const int32_t last = after.back();
    if (unrolled == 0) {
      eps(last, item.in);
    } else {
      const Frag sep = literal(", ");
      eps(last, sep.in);
      eps(sep.out, item.in);
    }
    const Frag sep = literal(", ");
    eps(item.out, sep.in);
    eps(sep.out, item.in);
    edge(item.out, ']', ']', f.out);
  }
  return f;
}

Result<Frag> NfaBuilder::object(const SchemaNode& n, const SlotPath& path) {
  Frag f;
  f.in = add();
  f.out = add();
  // p[i][e]: properties before i considered; e: a member was written.
  std::vector<std::array<int32_t, 2>> p(n.properties.size() + 1);
  for (auto& x : p) x = {add(), add()};
  edge(f.in, '{', '{', p[0][0]);
  for (size_t i = 0; i < n.properties.size(); ++i) {
    const Property& prop = n.properties[i];
    if (!prop.required) {
      eps(p[i][0], p[i + 1][0]);
      eps(p[i][1], p[i + 1][1]);
    }
    const int32_t key_at = add();
    eps(p[i][0], key_at);
    const Frag sep = literal(", ");
    eps(p[i][1], sep.in);
    eps(sep.out, key_at);
    const Frag key = literal(json::dump(json::Value::string(prop.name)) + ": ");
    eps(key_at, key.in);
    SlotPath member = path;
    member.push_back({prop.name, kKey});
    LAYA_ASSIGN_OR_RETURN(Frag v, value(prop.node, member));
    eps(key.out, v.in);
    eps(v.out, p[i + 1][1]);
  }
  edge(p.back()[0], '}', '}', f.out);
  edge(p.back()[1], '}', '}', f.out);
  return f;
}

Frag NfaBuilder::slot(const SchemaNode& n, int32_t node, const SlotPath& path) {
  Slot s;
  s.path = path;
  s.name = slot_path_name(path, {});
  s.node = node;
  if (n.kind == NodeKind::kBoolean) {
    s.values = {json::Value::boolean(true), json::Value::boolean(false)};
  } else {
    s.values = n.values;
  }
  if (n.nullable) s.values.push_back(json::Value());
  for (const json::Value& v : s.values) s.texts.push_back(json::dump(v));
  const int32_t id = static_cast<int32_t>(slots.size());
  // A trie of the option texts: every state but the exit belongs to the slot.
  Frag f;
  f.in = add();
  f.out = add();
  std::unordered_map<int64_t, int32_t> children;  // parent * 256 + byte -> state
  for (const std::string& t : s.texts) {
    int32_t cur = f.in;
    for (char c : t) {
      const int64_t key = static_cast<int64_t>(cur) * 256 + static_cast<uint8_t>(c);
      auto it = children.find(key);
      if (it != children.end()) {
        cur = it->second;
        continue;
      }
      const int32_t nx = add();
      edge(cur, static_cast<uint8_t>(c), static_cast<uint8_t>(c), nx);
      children.emplace(key, nx);
      cur = nx;
    }
    eps(cur, f.out);
  }
  for (int32_t st = f.in; st < static_cast<int32_t>(nfa.slot.size()); ++st)
    if (st != f.out) nfa.slot[static_cast<size_t>(st)] = id;
  nfa.slot_start[static_cast<size_t>(f.in)] = id;
  slots.push_back(std::move(s));
  return f;
}

Result<Frag> NfaBuilder::value(int32_t node, const SlotPath& path) {
  const SchemaNode& n = schema_.nodes[static_cast<size_t>(node)];
  if (full()) return too_large(n);
  if (n.kind == NodeKind::kEnum || n.kind == NodeKind::kBoolean) return slot(n, node, path);
  Frag inner;
  switch (n.kind) {
    case NodeKind::kNull:
      return literal("null");
    case NodeKind::kString: {
      LAYA_ASSIGN_OR_RETURN(inner, string(n));
      break;
    }
    case NodeKind::kInteger:
    case NodeKind::kNumber: {
      LAYA_ASSIGN_OR_RETURN(inner, number(n));
      break;
    }
    case NodeKind::kArray: {
      LAYA_ASSIGN_OR_RETURN(inner, array(n, path));
      break;
    }
    case NodeKind::kObject: {
      LAYA_ASSIGN_OR_RETURN(inner, object(n, path));
      break;
    }
    default:
      break;
  }
  if (!n.nullable) return inner;
  Frag f;
  f.in = add();
  f.out = add();
  const Frag null = literal("null");
  eps(f.in, inner.in);
  eps(f.in, null.in);
  eps(inner.out, f.out);
  eps(null.out, f.out);
  return f;
}

struct VecHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace

class AutomatonBuilder {
 public:
  static Result<CharAutomaton> build(const Nfa& nfa, int32_t start, int32_t accept,
                                     std::vector<Slot> slots, const AutomatonOptions& opts);
};

Result<CharAutomaton> AutomatonBuilder::build(const Nfa& nfa, int32_t start, int32_t accept,
                                              std::vector<Slot> slots,
                                              const AutomatonOptions& opts) {
  CharAutomaton a;
  // Byte classes from the edges' boundaries.
  auto byte_allowed = [&](int b) { return ((opts.allowed_bytes[b >> 6] >> (b & 63)) & 1) != 0; };
  bool boundary[257] = {};
  for (int b = 1; b < 256; ++b)
    if (byte_allowed(b) != byte_allowed(b - 1)) boundary[b] = true;
  for (const auto& es : nfa.edges)
    for (const Edge& e : es) {
      boundary[e.lo] = true;
      boundary[e.hi + 1] = true;
    }
  int32_t cls = -1;
  for (int b = 0; b < 256; ++b) {
    if (b == 0 || boundary[b]) ++cls;
    a.byte_class_[b] = static_cast<uint8_t>(cls);
  }
  const int32_t nc = cls + 1;
  a.num_classes_ = nc;
  std::vector<uint8_t> class_allowed(static_cast<size_t>(nc));
  for (int b = 0; b < 256; ++b) class_allowed[a.byte_class_[b]] = byte_allowed(b);

  auto closure = [&](std::vector<int32_t>& set) {
    std::vector<int32_t> stack = set;
    std::vector<int32_t> seen = set;
    std::sort(seen.begin(), seen.end());
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int32_t t : nfa.eps[static_cast<size_t>(s)]) {
        auto it = std::lower_bound(seen.begin(), seen.end(), t);
        if (it != seen.end() && *it == t) continue;
        seen.insert(it, t);
        stack.push_back(t);
      }
    }
    set = std::move(seen);
  };

  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<int32_t> trans;
  std::vector<int32_t> init{start};
  closure(init);
  ids.emplace(init, 0);
  sets.push_back(init);
  std::vector<std::vector<int32_t>> targets(static_cast<size_t>(nc));
  for (size_t d = 0; d < sets.size(); ++d) {
    for (auto& t : targets) t.clear();
    for (int32_t s : sets[d])
      for (const Edge& e : nfa.edges[static_cast<size_t>(s)])
        for (int32_t c = a.byte_class_[e.lo]; c <= a.byte_class_[e.hi]; ++c)
          targets[static_cast<size_t>(c)].push_back(e.to);
    for (int32_t c = 0; c < nc; ++c) {
      std::vector<int32_t>& t = targets[static_cast<size_t>(c)];
      if (!class_allowed[static_cast<size_t>(c)]) t.clear();
      if (t.empty()) {
        trans.push_back(kDeadState);
        continue;
      }
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      closure(t);
      auto it = ids.find(t);
      if (it == ids.end()) {
        if (sets.size() >= static_cast<size_t>(opts.max_dfa_states))
          return status_error(StatusCode::kInvalidArgument,
                              "the schema needs more than %d automaton states (lower maxLength or "
                              "maxItems)",
                              opts.max_dfa_states);
        it = ids.emplace(t, static_cast<int32_t>(sets.size())).first;
        sets.push_back(t);
      }
      trans.push_back(it->second);
    }
  }
  const size_t n = sets.size();

  // Marks from the NFA states each DFA state holds.
  std::vector<uint8_t> accepting(n, 0), mixed(n, 0);
  std::vector<int32_t> entry(n, -1), room(n, -1);
  for (size_t d = 0; d < n; ++d) {
    bool other = false;
    for (int32_t s : sets[d]) {
      if (s == accept) accepting[d] = 1;
      const int32_t st = nfa.slot_start[static_cast<size_t>(s)];
      if (st >= 0) {
        if (entry[d] >= 0 && entry[d] != st)
          return Status(StatusCode::kInternal, "two slots begin at one automaton state");
        entry[d] = st;
      }
      if (!nfa.edges[static_cast<size_t>(s)].empty() && nfa.slot[static_cast<size_t>(s)] < 0)
        other = true;
    }
    if (entry[d] >= 0 && (other || accepting[d])) mixed[d] = 1;
    room[d] = sets[d].size() == 1 ? nfa.room[static_cast<size_t>(sets[d][0])] : -1;
  }

  // Trim: keep the states that reach an accepting state.
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t d = 0; d < n; ++d)
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t t = trans[d * static_cast<size_t>(nc) + static_cast<size_t>(c)];
      if (t >= 0) preds[static_cast<size_t>(t)].push_back(static_cast<int32_t>(d));
    }
  std::vector<int32_t> dist(n, -1);  // bytes to accept
  std::deque<int32_t> q;
  for (size_t d = 0; d < n; ++d)
    if (accepting[d]) {
      dist[d] = 0;
      q.push_back(static_cast<int32_t>(d));
    }
  while (!q.empty()) {
    const int32_t d = q.front();
    q.pop_front();
    for (int32_t p : preds[static_cast<size_t>(d)])
      if (dist[static_cast<size_t>(p)] < 0) {
        dist[static_cast<size_t>(p)] = dist[static_cast<size_t>(d)] + 1;
        q.push_back(p);
      }
  }
  if (dist[0] < 0) return Status(StatusCode::kInvalidArgument, "the schema admits no document");

  // Renumber the live states breadth-first from the start.
  std::vector<int32_t> id(n, -1);
  std::vector<int32_t> order{0};
  id[0] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t d = static_cast<size_t>(order[i]);
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t t = trans[d * static_cast<size_t>(nc) + static_cast<size_t>(c)];
      if (t < 0 || dist[static_cast<size_t>(t)] < 0 || id[static_cast<size_t>(t)] >= 0) continue;
      id[static_cast<size_t>(t)] = static_cast<int32_t>(order.size());
      order.push_back(t);
    }
  }
  const size_t m = order.size();
  a.trans_.assign(m * static_cast<size_t>(nc), kDeadState);
  a.accepting_.resize(m);
  a.forced_.assign(m, -1);
  a.out_degree_.assign(m, 0);
  a.entry_.resize(m);
  a.mixed_.resize(m);
  a.room_.resize(m);
  a.min_accept_.resize(m);
  int32_t class_size[256] = {};
  int32_t class_byte[256] = {};
  for (int b = 255; b >= 0; --b) {
    ++class_size[a.byte_class_[b]];
    class_byte[a.byte_class_[b]] = b;
  }
  for (size_t i = 0; i < m; ++i) {
    const size_t d = static_cast<size_t>(order[i]);
    int32_t only = -1;
    for (int32_t c = 0; c < nc; ++c) {
      const int32_t t = trans[d * static_cast<size_t>(nc) + static_cast<size_t>(c)];
      if (t < 0 || id[static_cast<size_t>(t)] < 0) continue;
      a.trans_[i * static_cast<size_t>(nc) + static_cast<size_t>(c)] = id[static_cast<size_t>(t)];
      a.out_degree_[i] += class_size[c];
      only = class_byte[c];
    }
    a.accepting_[i] = accepting[d];
    a.entry_[i] = entry[d];
    a.mixed_[i] = mixed[d];
    a.room_[i] = room[d];
    a.min_accept_[i] = dist[d];
    if (a.out_degree_[i] == 1 && !accepting[d]) a.forced_[i] = only;
  }
  a.slots_ = std::move(slots);
  return a;
}

Result<CharAutomaton> automaton_build(const Schema& schema, const AutomatonOptions& opts) {
  if (schema.nodes.empty()) return Status(StatusCode::kInvalidArgument, "empty schema");
  NfaBuilder b(schema, opts);
  LAYA_ASSIGN_OR_RETURN(Frag root, b.value(schema.root, {}));
  return AutomatonBuilder::build(b.nfa, root.in, root.out, std::move(b.slots), opts);
}

}  // namespace laya::grammar
