// The character-level automaton of a schema: a DFA over bytes that accepts exactly the canonical
// texts (runtime/decisions/grammar/schema.h) of the schema's instances.
//
// Built once per schema: the schema becomes an NFA (Thompson fragments: literals, tries of enum
// texts, counted string characters with UTF-8 and escape sub-states, a digit-level range automaton
// per number, unrolled array items and optional object members), then a DFA by subset construction
// over byte classes, trimmed so that every state can still reach an accepting state (no dead ends).
//
// Numbers are exact at the bounds: for every integer-digit count k and fraction-digit count f the
// candidate texts are the n = k + f digit strings D (value D / 10^f) in [ceil(lo * 10^f),
// floor(hi * 10^f)] (one less / more for exclusive bounds), walked digit by digit with "still equal
// to the lower / upper bound" flags; the union over (k, f) is determinized with the rest.
//
// Slots: every enum or boolean value position of the text is a *slot* with a finite list of option
// texts (json.dumps of each value). The automaton marks the states where a slot's text begins
// (`entry`): *pure* when every continuation lies in the slot, *mixed* when the text may also go
// elsewhere (the first item of an array that may be empty: `]` or an item). Decoding uses them to
// read the model's probabilities of whole options (runtime/decisions/grammar/token_automaton.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/text/json.h"

namespace laya::grammar {

inline constexpr int32_t kDeadState = -1;

// One step of the way from the root to a value: a member key, an item index, or any item (an
// array without maxItems: every item from the unrolled ones on shares one fragment).
inline constexpr int64_t kKey = -2;
inline constexpr int64_t kAnyItem = -1;
struct SlotStep {
  std::string key;       // kKey steps
  int64_t index = kKey;  // >= 0: that item; kAnyItem; kKey: a member
};
using SlotPath = std::vector<SlotStep>;

// The dotted name of a path: "action", "rooms[1].mode", "$" for the root. A kAnyItem step takes
// the next of `items` (the item indices of the enclosing any-item arrays, outer first), or is
// written "[]" when they run out.
std::string slot_path_name(const SlotPath& path, std::span<const int64_t> items);

// An enum / boolean value position (one per array item when the array is unrolled).
struct Slot {
  SlotPath path;
  // slot_path_name(path, {}): "action", "rooms[1].mode", "tags[]", "$" for a root value.
  std::string name;
  int32_t node = -1;                // the schema node (kEnum or kBoolean)
  std::vector<std::string> texts;   // option texts, in schema order (true before false)
  std::vector<json::Value> values;  // the option values, same order
};

struct AutomatonOptions {
  SchemaOptions schema;
  // Refuse schemas whose automaton would be larger (maxLength / maxItems multiply states).
  int32_t max_nfa_states = 400000;
  int32_t max_dfa_states = 200000;
  // Bytes the text may contain (bit b of word b / 64); others get no transitions. The token
  // automaton keeps only bytes that have a single-byte token, so every state can complete.
  uint64_t allowed_bytes[4] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
};

class CharAutomaton {
 public:
  int32_t num_states() const { return static_cast<int32_t>(accepting_.size()); }
  static constexpr int32_t start() { return 0; }
  // The state after byte `b`, or kDeadState when no valid text continues with it.
  int32_t next(int32_t s, uint8_t b) const {
    return trans_[static_cast<size_t>(s) * num_classes_ + byte_class_[b]];
  }
  // The state after `bytes`, or kDeadState.
  int32_t walk(int32_t s, const char* bytes, size_t n) const {
    for (size_t i = 0; i < n && s >= 0; ++i) s = next(s, static_cast<uint8_t>(bytes[i]));
    return s;
  }
  bool accepting(int32_t s) const { return accepting_[static_cast<size_t>(s)] != 0; }
  // The only byte that can follow `s` (a forced character), or -1 (several, or none, or `s`
  // accepts: then the text may also end here).
  int32_t forced_byte(int32_t s) const { return forced_[static_cast<size_t>(s)]; }
  // No byte can follow (the text is complete).
  bool final(int32_t s) const { return accepting(s) && out_degree_[static_cast<size_t>(s)] == 0; }

  // The slot whose text begins at `s` (-1: none) and whether other continuations exist too.
  int32_t entry_slot(int32_t s) const { return entry_[static_cast<size_t>(s)]; }
  bool entry_mixed(int32_t s) const { return mixed_[static_cast<size_t>(s)] != 0; }
  const std::vector<Slot>& slots() const { return slots_; }

  // Inside a string value, before a character: how many more characters the string may take
  // (INT32_MAX when unbounded); -1 for every other state. From such a state any "plain" character
  // (runtime/decisions/grammar/vocab.h) leads to the same kind of state with one less.
  int32_t string_room(int32_t s) const { return room_[static_cast<size_t>(s)]; }
  // The fewest bytes from `s` to an accepting state.
  int32_t min_bytes_to_accept(int32_t s) const { return min_accept_[static_cast<size_t>(s)]; }
  // Byte classes: bytes with identical transitions everywhere.
  int32_t num_classes() const { return num_classes_; }
  uint8_t byte_class(uint8_t b) const { return byte_class_[b]; }
  int32_t next_class(int32_t s, int32_t c) const {
    return trans_[static_cast<size_t>(s) * num_classes_ + static_cast<size_t>(c)];
  }

 private:
  friend class AutomatonBuilder;
  int32_t num_classes_ = 0;
  uint8_t byte_class_[256] = {};
  std::vector<int32_t> trans_;  // [num_states, num_classes]
  std::vector<uint8_t> accepting_;
  std::vector<int32_t> forced_;
  std::vector<int32_t> out_degree_;  // number of bytes with a transition
  std::vector<int32_t> entry_;
  std::vector<uint8_t> mixed_;
  std::vector<int32_t> room_;
  std::vector<int32_t> min_accept_;
  std::vector<Slot> slots_;
};

// kInvalidArgument naming the schema path when a node admits no canonical text (e.g. no integer
// between minimum 0.5 and maximum 0.9) or the automaton exceeds the options' limits.
Result<CharAutomaton> automaton_build(const Schema& schema, const AutomatonOptions& opts = {});

}  // namespace laya::grammar
