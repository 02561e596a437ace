// The prefix cache (runtime/prefix_cache.h) with the decoder runner on the tiny llama / qwen2
// GGUFs and, when present, the real SmolLM2 Q4_1 file: generation with the cache equals generation
// without it (a hit prefills only the suffix), longest prefix, partial blocks, LRU eviction under
// the byte budget, a hit after an eviction, two working sequences, errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "frontends/gguf_tokenizer.h"
#include "runtime/prefix_cache.h"
#include "tests/frontends/gguf_generate_util.h"
#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::test;

namespace {

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::unique_ptr<runtime::PrefixCache> make_prefix_cache(Cached& c, int64_t block, int32_t slots,
                                                        int64_t budget_tokens,
                                                        int32_t first_seq = 1) {
  auto layout = runtime::kv_cache_layout(c.graph);
  REQUIRE(layout.is_ok());
  runtime::PrefixCacheOptions o;
  o.block_tokens = block;
  o.first_seq = first_seq;
  o.slots = slots;
  o.budget_bytes = static_cast<uint64_t>(budget_tokens) * layout->bytes_per_cell;
  auto p = runtime::PrefixCache::create(*c.cache, *layout, o);
  REQUIRE_MESSAGE(p.is_ok(), p.status().to_string());
  return std::move(p).value();
}

// Prefills `ids` into sequence 0 (emptied first) and stores its blocks.
void prefill_and_store(Cached& c, runtime::PrefixCache& pc, const std::vector<int32_t>& ids) {
  REQUIRE(c.cache->remove(0).is_ok());
  REQUIRE(c.runner->prefill(0, ids).is_ok());
  REQUIRE(pc.store(ids, 0).is_ok());
  REQUIRE(c.cache->remove(0).is_ok());
}

// The tokens restore() reuses for `ids` (into sequence 0, emptied before and after).
int64_t probe(Cached& c, runtime::PrefixCache& pc, const std::vector<int32_t>& ids) {
  REQUIRE(c.cache->remove(0).is_ok());
  Result<int64_t> hit = pc.restore(ids, 0);
  REQUIRE_MESSAGE(hit.is_ok(), hit.status().to_string());
  CHECK(c.cache->seq_length(0) == *hit);
  REQUIRE(c.cache->remove(0).is_ok());
  return *hit;
}

}  // namespace

TEST_CASE("prefix cache: generation equals generation without it, only the suffix prefilled") {
  for (const char* name : {"tiny-llama.gguf", "tiny-qwen2.gguf"})
    for (const char* kernels : {"ref", "auto"}) {
      CAPTURE(std::string(name));
      CAPTURE(std::string(kernels));
      const auto f = open_file(fixtures_dir() + name);
      const int64_t kChunk = 5, kNew = 10, kBlock = 4;
      Cached plain(f, kernels, 1, kChunk, 64);
      // Working sequences 0 and 1, slots 2 .. 3 with 48 tokens of budget.
      Cached cached(f, kernels, 1, kChunk, 64 + 48, 4);
      auto pc = make_prefix_cache(cached, kBlock, 2, 48, 2);
      const int64_t V = plain.runner->vocab();
      const double tol = std::string(kernels) == "ref" ? 1e-6 : 2e-5;
      const std::vector<int32_t> sys = random_ids(13, V, 11), x = random_ids(9, V, 1);
      const std::vector<int32_t> p0 = concat(sys, std::vector<int32_t>(x.begin(), x.begin() + 5));
      struct Case {
        std::vector<int32_t> prompt;
        int64_t hit;    // tokens generate reuses
        int64_t after;  // tokens a lookup reuses once generate stored the prompt's blocks
      };
      const std::vector<Case> cases = {
          {p0, 0, 16},                                 // cold: stores 4 blocks (16 tokens)
          {concat(sys, random_ids(6, V, 2)), 12, 16},  // shares 13 tokens: 3 whole blocks
          {concat(sys, x), 16, 20},       // p0 and 4 more: 4 blocks; replaces p0's slot
          {random_ids(20, V, 3), 0, 19},  // nothing in common; evicts the LRU (the 2nd prompt)
          {p0, 16, 16},                   // within the 3rd prompt's blocks
      };
      for (size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(i);
        const std::vector<int32_t>& prompt = cases[i].prompt;
        runtime::GenerateRequest req;
        req.prompt = prompt;
        req.max_tokens = kNew;
        std::vector<int32_t> want, got;
        runtime::DecoderStats ws, gs;
        plain.cache->clear();
        REQUIRE(plain.runner->generate(req, &want, &ws).is_ok());
        REQUIRE(cached.cache->remove(0).is_ok());
        req.prefix_cache = pc.get();
        const Status st = cached.runner->generate(req, &got, &gs);
        REQUIRE_MESSAGE(st.is_ok(), st.to_string());
        CHECK(got == want);
        CHECK(gs.prefix_hit_tokens == cases[i].hit);
        CHECK(gs.prefill_steps ==
              (static_cast<int64_t>(prompt.size()) - cases[i].hit + kChunk - 1) / kChunk);
        CHECK(ws.prefix_hit_tokens == 0);

        // The prompt's last logits, restored + suffix against the full prefill.
        plain.cache->clear();
        REQUIRE(plain.runner->prefill(0, prompt).is_ok());
        REQUIRE(cached.cache->remove(0).is_ok());
        Result<int64_t> hit = pc->restore(prompt, 0);
        REQUIRE(hit.is_ok());
        CHECK(*hit == cases[i].after);
        REQUIRE(cached.runner->prefill(0, std::span(prompt).subspan(static_cast<size_t>(*hit)))
                    .is_ok());
        CHECK(rel_error(cached.runner->last_logits().data(), plain.runner->last_logits().data(),
                        V) <= tol);
      }
      const runtime::PrefixCacheStats& s = pc->stats();
      CHECK(s.lookups == 10);
      CHECK(s.misses == 2);  // the cold prompt and the unrelated one
      CHECK(s.hits == 8);
      CHECK(s.evictions == 1);
      CHECK(s.cached_tokens == 40);
      CHECK(s.cached_bytes <= 48 * runtime::kv_cache_layout(cached.graph)->bytes_per_cell);
    }
}

TEST_CASE("prefix cache: partial blocks, the longest prefix wins") {
  const auto f = open_file(fixtures_dir() + "tiny-llama.gguf");
  Cached c(f, "auto", 1, 8, 128, 4);
  auto pc = make_prefix_cache(c, 8, 3, 64);
  const int64_t V = c.runner->vocab();
  const std::vector<int32_t> a = random_ids(21, V, 5);  // 2 whole blocks stored: 16 tokens
  prefill_and_store(c, *pc, a);
  CHECK(pc->stats().cached_tokens == 16);
  CHECK(probe(c, *pc, std::vector<int32_t>(a.begin(), a.begin() + 7)) == 0);  // < one block
  CHECK(probe(c, *pc, std::vector<int32_t>(a.begin(), a.begin() + 8)) ==
        7);  // one block: all but 1
  CHECK(probe(c, *pc, std::vector<int32_t>(a.begin(), a.begin() + 12)) == 8);   // 1.5 blocks
  CHECK(probe(c, *pc, std::vector<int32_t>(a.begin(), a.begin() + 16)) == 15);  // the whole prefix
  CHECK(probe(c, *pc, a) == 16);
  std::vector<int32_t> b = a;
  b[11] = (b[11] + 1) % static_cast<int32_t>(V);  // differs in the second block
  CHECK(probe(c, *pc, b) == 8);
  b[0] = (b[0] + 1) % static_cast<int32_t>(V);  // differs in the first token
  CHECK(probe(c, *pc, b) == 0);
  // A longer prefix sharing a's first block wins over a for prompts that follow it.
  std::vector<int32_t> d(a.begin(), a.begin() + 8);
  d = concat(d, random_ids(24, V, 6));  // 4 blocks
  prefill_and_store(c, *pc, d);
  CHECK(probe(c, *pc, concat(d, {1})) == 32);
  CHECK(probe(c, *pc, a) == 16);
  // Extending a cached prefix replaces its slot (no eviction, the budget counts it once).
  prefill_and_store(c, *pc, concat(a, random_ids(11, V, 7)));  // 32 tokens, a's 16 + 16
  CHECK(pc->stats().evictions == 0);
  CHECK(pc->stats().cached_tokens == 64);
  // Storing a prefix already covered only marks it used.
  const int64_t stores = pc->stats().stores;
  prefill_and_store(c, *pc, std::vector<int32_t>(d.begin(), d.begin() + 17));
  CHECK(pc->stats().stores == stores);
}

TEST_CASE("prefix cache: LRU eviction under the byte budget, a hit after an eviction") {
  const auto f = open_file(fixtures_dir() + "tiny-llama.gguf");
  Cached c(f, "auto", 1, 8, 64, 5);
  const uint64_t per_cell = runtime::kv_cache_layout(c.graph)->bytes_per_cell;
  auto pc = make_prefix_cache(c, 4, 4, 20);  // room for two 8-token prefixes (+ 4 tokens)
  const int64_t V = c.runner->vocab();
  const std::vector<int32_t> a = random_ids(9, V, 21), b = random_ids(9, V, 22),
                             d = random_ids(9, V, 23);
  auto check_budget = [&] {
    const runtime::PrefixCacheStats& s = pc->stats();
    CHECK(s.cached_bytes <= 20 * per_cell);
    CHECK(s.cached_bytes == static_cast<uint64_t>(s.cached_tokens) * per_cell);
    int64_t in_slots = 0;
    for (int32_t q = 1; q < 5; ++q) in_slots += c.cache->seq_length(q);
    CHECK(in_slots == s.cached_tokens);
    CHECK(c.cache->n_free() == c.cache->capacity() - s.cached_tokens);
  };
  prefill_and_store(c, *pc, a);
  prefill_and_store(c, *pc, b);
  check_budget();
  CHECK(pc->stats().evictions == 0);
  CHECK(probe(c, *pc, a) == 8);  // a is now the most recently used
  prefill_and_store(c, *pc, d);  // 24 tokens > 20: evicts the LRU, b
  check_budget();
  CHECK(pc->stats().evictions == 1);
  CHECK(probe(c, *pc, b) == 0);
  CHECK(probe(c, *pc, a) == 8);
  CHECK(probe(c, *pc, d) == 8);  // d now the most recent, a the LRU
  prefill_and_store(c, *pc, b);  // evicts a
  check_budget();
  CHECK(pc->stats().evictions == 2);
  CHECK(probe(c, *pc, b) == 8);  // a hit after an eviction
  CHECK(probe(c, *pc, a) == 0);
  CHECK(probe(c, *pc, d) == 8);
  // A prefix longer than the budget is stored cut to the blocks that fit, evicting everything.
  const std::vector<int32_t> big = random_ids(30, V, 24);
  prefill_and_store(c, *pc, big);
  check_budget();
  CHECK(pc->stats().cached_tokens == 20);
  CHECK(probe(c, *pc, big) == 20);
  CHECK(probe(c, *pc, b) == 0);
  // The slot count bounds the prefixes too: a large budget, two slots.
  Cached c2(f, "auto", 1, 8, 128, 3);
  auto p2 = make_prefix_cache(c2, 4, 2, 100);
  prefill_and_store(c2, *p2, a);
  prefill_and_store(c2, *p2, b);
  prefill_and_store(c2, *p2, d);  // evicts a
  CHECK(p2->stats().evictions == 1);
  CHECK(probe(c2, *p2, a) == 0);
  CHECK(probe(c2, *p2, b) == 8);
  CHECK(probe(c2, *p2, d) == 8);
}

TEST_CASE("prefix cache: two working sequences share the cache, outputs unchanged") {
  const auto f = open_file(fixtures_dir() + "tiny-qwen2.gguf");
  const int64_t kNew = 8;
  Cached plain(f, "auto", 1, 6, 64);
  Cached cached(f, "auto", 1, 6, 64 + 64, 4);
  auto pc = make_prefix_cache(cached, 4, 2, 64, 2);
  const int64_t V = plain.runner->vocab();
  const std::vector<int32_t> sys = random_ids(17, V, 31);
  const std::vector<int32_t> p0 = concat(sys, random_ids(4, V, 32)),
                             p1 = concat(sys, random_ids(7, V, 33));
  std::vector<int32_t> want0, want1, got0, got1;
  runtime::GenerateRequest req;
  req.max_tokens = kNew;
  req.prompt = p0;
  REQUIRE(plain.runner->generate(req, &want0, nullptr).is_ok());
  plain.cache->clear();
  req.prompt = p1;
  REQUIRE(plain.runner->generate(req, &want1, nullptr).is_ok());

  req.prefix_cache = pc.get();
  runtime::DecoderStats s0, s1;
  req.prompt = p0;
  req.seq = 0;
  REQUIRE(cached.runner->generate(req, &got0, &s0).is_ok());
  req.prompt = p1;
  req.seq = 1;  // sequence 0 keeps its cells meanwhile
  REQUIRE(cached.runner->generate(req, &got1, &s1).is_ok());
  CHECK(got0 == want0);
  CHECK(got1 == want1);
  CHECK(s0.prefix_hit_tokens == 0);
  CHECK(s1.prefix_hit_tokens == 16);
  CHECK(cached.cache->seq_length(0) == static_cast<int64_t>(p0.size()) + kNew - 1);
  // A sequence that is not empty continues its tokens without the prefix cache.
  req.prompt = p0;
  req.max_tokens = 2;
  REQUIRE(cached.runner->generate(req, &got1, &s1).is_ok());
  CHECK(s1.prefix_hit_tokens == 0);
  CHECK(pc->stats().lookups == 2);
}

TEST_CASE("prefix cache: errors and a cache cleared behind its back") {
  const auto f = open_file(fixtures_dir() + "tiny-llama.gguf");
  Cached c(f, "auto", 1, 4, 64, 3);
  auto layout = runtime::kv_cache_layout(c.graph);
  REQUIRE(layout.is_ok());
  runtime::PrefixCacheOptions o;
  o.budget_bytes = 64 * layout->bytes_per_cell;
  o.block_tokens = 0;
  CHECK_STATUS(runtime::PrefixCache::create(*c.cache, *layout, o).status(),
               StatusCode::kInvalidArgument, "block of 0 tokens");
  o.block_tokens = 4;
  o.slots = 3;  // sequences 1 .. 3 of [0, 3)
  CHECK_STATUS(runtime::PrefixCache::create(*c.cache, *layout, o).status(),
               StatusCode::kInvalidArgument, "3 slot(s) from sequence 1");
  o.slots = 2;
  o.budget_bytes = 3 * layout->bytes_per_cell;
  CHECK_STATUS(runtime::PrefixCache::create(*c.cache, *layout, o).status(),
               StatusCode::kInvalidArgument, "holds no block of 4 tokens");
  o.budget_bytes = 32 * layout->bytes_per_cell;
  const std::vector<int32_t> ids = random_ids(10, c.runner->vocab(), 41);
  REQUIRE(c.runner->prefill(1, ids).is_ok());
  CHECK_STATUS(runtime::PrefixCache::create(*c.cache, *layout, o).status(),
               StatusCode::kInvalidArgument, "slot sequence 1", "not empty");
  c.cache->clear();
  auto pc = runtime::PrefixCache::create(*c.cache, *layout, o);
  REQUIRE(pc.is_ok());
  REQUIRE(c.runner->prefill(0, ids).is_ok());
  CHECK_STATUS((*pc)->restore(ids, 0).status(), StatusCode::kInvalidArgument, "empty sequence");
  CHECK_STATUS((*pc)->restore(ids, 2).status(), StatusCode::kInvalidArgument, "is a slot");
  CHECK_STATUS((*pc)->store(ids, 1), StatusCode::kInvalidArgument, "is a slot");
  CHECK_STATUS((*pc)->store(concat(ids, ids), 0), StatusCode::kInvalidArgument, "holds 10 tokens");
  REQUIRE((*pc)->store(ids, 0).is_ok());
  CHECK((*pc)->stats().cached_tokens == 8);
  // Another runner's cache.
  Cached other(f, "auto", 1, 4, 64, 3);
  runtime::GenerateRequest req;
  req.prompt = ids;
  req.prefix_cache = pc->get();
  std::vector<int32_t> out;
  CHECK_STATUS(other.runner->generate(req, &out, nullptr), StatusCode::kInvalidArgument,
               "another KV cache");
  // clear() empties the slots' sequences: the prefix cache notices and misses.
  c.cache->clear();
  CHECK(probe(c, **pc, ids) == 0);
  CHECK((*pc)->stats().cached_tokens == 0);
}

TEST_CASE("prefix cache on SmolLM2 Q4_1: a shared system prompt, the same greedy tokens") {
  const std::string path = smollm2_or_skip();
  if (path.empty()) return;
  const auto f = open_file(path);
  auto tokenizer = frontends::gguf::gguf_tokenizer(*f);
  REQUIRE(tokenizer.is_ok());
  tok::EncodeOptions eo;
  eo.add_special_tokens = true;
  const std::string sys =
      "You are the controller of a smart-home hub. Devices: living room lights, kitchen lights, "
      "thermostat, cooling fan, front door lock, garage door. Answer with one short action.\n";
  const char* questions[] = {"The kitchen is dark and someone entered. Action:",
                             "The living room reads 29 degrees. Action:",
                             "Everyone left and the front door is unlocked. Action:"};
  for (ir::DType kv : {ir::DType::kF32, ir::DType::kF16}) {  // f16: an f16 KV cache (and prefix)
    CAPTURE(ir::dtype_name(kv));
    Cached plain(f, "auto", 1, 32, 160, 2, kv);
    Cached cached(f, "auto", 1, 32, 160 + 128, 3, kv);
    auto pc = make_prefix_cache(cached, 16, 2, 128);
    for (const char* q : questions) {
      CAPTURE(std::string(q));
      std::vector<int32_t> prompt;
      REQUIRE((*tokenizer)->encode(sys + q, eo, &prompt).is_ok());
      runtime::GenerateRequest req;
      req.prompt = prompt;
      req.max_tokens = 12;
      std::vector<int32_t> want, got;
      plain.cache->clear();
      REQUIRE(plain.runner->generate(req, &want, nullptr).is_ok());
      REQUIRE(cached.cache->remove(0).is_ok());
      req.prefix_cache = pc.get();
      runtime::DecoderStats s;
      REQUIRE(cached.runner->generate(req, &got, &s).is_ok());
      CHECK(got == want);
      MESSAGE("prompt " << prompt.size() << " tokens, prefix-cache hit " << s.prefix_hit_tokens);
    }
    CHECK(pc->stats().hits == 2);
  }
}
