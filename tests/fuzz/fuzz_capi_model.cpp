// Fuzz target: any bytes as a model image through the C API: laya_model_open_memory (full
// verification; .laya or GGUF by the first bytes), and for an image that opens, a context at small
// limits on regions of its asked sizes (skipped past 256 MiB) and one call on it (an encoder
// decision, or two generated tokens and a schema decision on a decoder). Any input must give a
// status, never a crash, a sanitizer report or a leak. Seeds: seeds_capi_model.cpp (the tiny
// Laya checkpoint converted, the tiny llama GGUF).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "include/laya/laya.h"

namespace {

constexpr uint64_t kMaxContextBytes = uint64_t{256} << 20;
const char kBody[] =
    "{\"state\": \"the pump is loud\", \"questions\": {\"q\": {\"type\": \"noul\", "
    "\"instructions\": \"Is it broken?\"}}}";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // .laya images must be 64-byte aligned (a mapping is): copy into aligned memory.
  void* image = std::aligned_alloc(64, (size + 64) / 64 * 64);
  if (size) std::memcpy(image, data, size);
  laya_model_params p = laya_model_default_params();
  p.n_threads = 1;
  laya_model* m = nullptr;
  laya_error err;
  if (laya_model_open_memory(image, size, &p, &m, &err) == LAYA_OK) {
    laya_model_info info = laya_model_info_init();
    (void)laya_model_info_get(m, &info);
    laya_context_limits lim = laya_context_default_limits();
    lim.max_tokens = info.kind == LAYA_MODEL_ENCODER ? 256 : 0;
    lim.max_request_bytes = 4096;
    lim.kv_cells = info.kind == LAYA_MODEL_DECODER ? 128 : 0;
    lim.chunk = 16;
    laya_memory_requirements req = laya_memory_requirements_init();
    uint64_t total = 0;
    if (laya_context_requirements(m, &lim, &req, &err) == LAYA_OK) {
      for (int r = 0; r < LAYA_REGION_COUNT; ++r) total += req.size[r] + req.alignment[r];
      if (total <= kMaxContextBytes) {
        std::vector<void*> mem;
        laya_region regions[LAYA_REGION_COUNT];
        for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
          const size_t a = static_cast<size_t>(req.alignment[r]);
          const size_t n = (static_cast<size_t>(req.size[r]) + a - 1) / a * a;
          mem.push_back(n ? std::aligned_alloc(a, n) : nullptr);
          regions[r] = {mem.back(), n};
        }
        laya_context* ctx = nullptr;
        if (laya_context_create(m, &lim, regions, &ctx, &err) == LAYA_OK) {
          size_t n = 0;
          if (info.kind == LAYA_MODEL_ENCODER) {
            (void)laya_decide(ctx, kBody, sizeof kBody - 1, nullptr, 0, &n);
          } else {
            laya_generate_params gp = laya_generate_params_init();
            const int32_t ids[3] = {1, 2, 3};
            gp.prompt_ids = ids;
            gp.n_prompt_ids = 3;
            gp.max_tokens = 2;
            (void)laya_generate(ctx, &gp, nullptr, 0, &n);
            laya_schema_request sr = laya_schema_request_init();
            sr.state = "{\"t\": 1}";
            sr.schema = "{\"type\": \"boolean\"}";
            sr.max_tokens = 4;
            (void)laya_decide_schema(ctx, &sr, nullptr, 0, &n);
          }
          laya_context_destroy(ctx);
        }
        for (void* q : mem) std::free(q);
      }
    }
    laya_model_close(m);
  }
  std::free(image);
  return 0;
}
