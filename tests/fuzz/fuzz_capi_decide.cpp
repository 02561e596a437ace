// Fuzz target: any bytes as request bodies through the C API on a real model (the tiny Laya
// checkpoint, converted at build time: LAYA_FUZZ_MODEL): laya_decide, the typed accessors of
// every answer, laya_result_json with small buffers, and laya_decide_batch of the input twice
// (each result equal to the single one). Any input must give a status, never a crash, a sanitizer
// report, a leak, or a batch result that differs from the body alone. Seeds: seeds/capi_decide
// and the request target's.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "include/laya/laya.h"

namespace {

struct Fixture {
  laya_model* m = nullptr;
  laya_context* ctx = nullptr;
  std::vector<void*> mem;
  Fixture() {
    laya_model_params p = laya_model_default_params();
    p.n_threads = 1;
    laya_error err;
    if (laya_model_open_file(LAYA_FUZZ_MODEL, &p, &m, &err) != LAYA_OK) std::abort();
    laya_context_limits lim = laya_context_default_limits();
    lim.max_tokens = 512;
    lim.max_request_bytes = 64 << 10;
    lim.max_batch = 2;
    laya_memory_requirements req = laya_memory_requirements_init();
    if (laya_context_requirements(m, &lim, &req, &err) != LAYA_OK) std::abort();
    laya_region regions[LAYA_REGION_COUNT];
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      const size_t a = static_cast<size_t>(req.alignment[r]);
      const size_t n = (static_cast<size_t>(req.size[r]) + a - 1) / a * a;
      mem.push_back(n ? std::aligned_alloc(a, n) : nullptr);
      regions[r] = {mem.back(), n};
    }
    if (laya_context_create(m, &lim, regions, &ctx, &err) != LAYA_OK) std::abort();
  }
  ~Fixture() {
    laya_context_destroy(ctx);
    laya_model_close(m);
    for (void* p : mem) std::free(p);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  const char* body = reinterpret_cast<const char*>(data);
  size_t n = 0;
  std::string alone;
  if (laya_decide(f.ctx, body, size, nullptr, 0, &n) == LAYA_OK) {
    alone.assign(n + 1, '\0');
    char small[4];
    (void)laya_result_json(f.ctx, small, sizeof small, &n);
    if (laya_result_json(f.ctx, alone.data(), alone.size(), &n) != LAYA_OK) std::abort();
    alone.resize(n);
    const size_t states = laya_result_states(f.ctx), questions = laya_result_questions(f.ctx);
    double sink = 0;
    for (size_t s = 0; s < states; ++s)
      for (size_t q = 0; q < questions; ++q) {
        laya_answer a = laya_answer_init();
        if (laya_result_answer(f.ctx, s, q, &a) != LAYA_OK) continue;
        for (int32_t i = 0; i < a.n_options; ++i) sink += a.probabilities[i];
        const char* label = nullptr;
        for (int32_t i = 0; i < a.n_options; ++i)
          if (laya_result_option(f.ctx, q, static_cast<size_t>(i), &label) == LAYA_OK)
            sink += static_cast<double>(std::strlen(label));
      }
    if (sink < 0) std::abort();
  } else if (std::strlen(laya_context_error(f.ctx)) == 0) {
    std::abort();  // a refusal always says why
  }
  laya_batch_item items[2] = {{body, size, LAYA_OK, 0, 0}, {body, size, LAYA_OK, 0, 0}};
  if (laya_decide_batch(f.ctx, items, 2, nullptr, 0, &n) == LAYA_OK) {
    std::vector<char> out(n + 1);
    if (laya_decide_batch(f.ctx, items, 2, out.data(), out.size(), &n) != LAYA_OK) std::abort();
    for (const laya_batch_item& it : items)
      if (it.status == LAYA_OK && std::string(out.data() + it.json_offset, it.json_len) != alone)
        std::abort();  // a batched body answers as it does alone
  }
  return 0;
}
