/*
 * A firmware-style embedding of Laya Runtime (include/laya/laya.h), in C99: every region in one
 * static pool (no malloc of the program's own), limits a device would set, one encoder decision
 * (a /v1/systemone body, read back both as JSON and as typed answers) and one schema decision on
 * a decoder. Build against the installed library (examples/firmware/README.md):
 *
 *   cc -std=c99 firmware.c $(pkg-config --cflags --libs laya) -o firmware
 *   ./firmware ENCODER.laya REQUEST.json DECODER.gguf
 *
 * With heap_check.c linked in, it also reports the heap calls the decisions made (0).
 */
#include <laya/laya.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The program's memory: one pool in .bss (untouched pages cost nothing until used). */
#define POOL_BYTES ((size_t)384 << 20)
static unsigned char pool[POOL_BYTES] __attribute__((aligned(4096)));
static size_t pool_used;

static unsigned char request[64 << 10];
static const char kSchema[] =
    "{\"type\": \"object\", \"properties\": {\"action\": {\"enum\": [\"continue\", "
    "\"switch_to_standby\", \"shut_down\"]}, \"page_operator\": {\"type\": \"boolean\"}}, "
    "\"required\": [\"action\", \"page_operator\"]}";
static char out[64 << 10];

/* Optional (heap_check.c): count the heap calls between begin and end. */
void heap_check_begin(void) __attribute__((weak));
long heap_check_end(void) __attribute__((weak));

static void* take(uint64_t bytes, uint64_t align) {
  size_t at = (pool_used + (size_t)align - 1) / (size_t)align * (size_t)align;
  if (bytes > POOL_BYTES || at > POOL_BYTES - (size_t)bytes) return NULL;
  pool_used = at + (size_t)bytes;
  return pool + at;
}

/* A context on regions from the pool. */
static laya_status context(laya_model* m, const laya_context_limits* lim, laya_context** ctx) {
  laya_memory_requirements req = laya_memory_requirements_init();
  laya_region regions[LAYA_REGION_COUNT];
  laya_error err;
  int r;
  laya_status s = laya_context_requirements(m, lim, &req, &err);
  if (s != LAYA_OK) {
    fprintf(stderr, "requirements: %s\n", err.message);
    return s;
  }
  for (r = 0; r < LAYA_REGION_COUNT; ++r) {
    regions[r].size = (size_t)req.size[r];
    regions[r].data = req.size[r] ? take(req.size[r], req.alignment[r]) : NULL;
    if (req.size[r] && !regions[r].data) {
      fprintf(stderr, "the pool is too small for region %d (%llu bytes)\n", r,
              (unsigned long long)req.size[r]);
      return LAYA_E_MEMORY;
    }
  }
  s = laya_context_create(m, lim, regions, ctx, &err);
  if (s != LAYA_OK) fprintf(stderr, "context: %s\n", err.message);
  return s;
}

static size_t read_file(const char* path, unsigned char* buf, size_t cap) {
  size_t n = 0;
  FILE* f = fopen(path, "rb");
  if (f) {
    n = fread(buf, 1, cap, f);
    fclose(f);
  }
  return n;
}

int main(int argc, char** argv) {
  laya_model_params mp = laya_model_default_params();
  laya_context_limits lim = laya_context_default_limits();
  laya_model *enc = NULL, *dec = NULL;
  laya_context *ectx = NULL, *dctx = NULL;
  laya_schema_request sr = laya_schema_request_init();
  laya_schema_result res = laya_schema_result_init();
  laya_error err;
  size_t body_len, n, q;
  long heap = -1;
  laya_status s;
  if (argc != 4) {
    fprintf(stderr, "usage: firmware ENCODER.laya REQUEST.json DECODER.gguf\n");
    return 2;
  }
  body_len = read_file(argv[2], request, sizeof request);
  if (body_len == 0) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  mp.n_threads = 1; /* one core of a small device */
  if (laya_model_open_file(argv[1], &mp, &enc, &err) != LAYA_OK ||
      laya_model_open_file(argv[3], &mp, &dec, &err) != LAYA_OK) {
    fprintf(stderr, "open: %s\n", err.message);
    return 1;
  }
  /* A device's limits: short requests, small passes. */
  lim.max_tokens = 512;
  lim.max_rows = 16;
  lim.max_request_bytes = 16 << 10;
  if (context(enc, &lim, &ectx) != LAYA_OK) return 1;
  lim = laya_context_default_limits();
  lim.max_request_bytes = 16 << 10;
  lim.kv_cells = 1024;
  lim.chunk = 32;
  if (context(dec, &lim, &dctx) != LAYA_OK) return 1;
  printf("pool used: %.1f MiB of %.0f\n", pool_used / 1048576.0, POOL_BYTES / 1048576.0);

  /* The decision's schema (its grammar over the vocabulary) compiled as a load step. */
  if (laya_model_compile_schema(dec, kSchema, strlen(kSchema), &err) != LAYA_OK) {
    fprintf(stderr, "schema: %s\n", err.message);
    return 1;
  }
  if (heap_check_begin) heap_check_begin();
  /* The encoder decision: the SDK's JSON, then the typed view (no JSON needed). */
  s = laya_decide(ectx, (const char*)request, body_len, out, sizeof out, &n);
  if (s != LAYA_OK) {
    fprintf(stderr, "decide: %s: %s\n", laya_status_string(s), laya_context_error(ectx));
    return 1;
  }
  printf("%s\n", out);
  for (q = 0; q < laya_result_questions(ectx); ++q) {
    laya_answer a = laya_answer_init();
    if (laya_result_answer(ectx, 0, q, &a) != LAYA_OK) return 1;
    if (a.type == LAYA_CHOICE)
      printf("%s: %s (p %.6f, confidence %.4f)\n", a.question_id, a.choice_label,
             (double)a.probabilities[a.choice], a.confidence);
    else if (a.type == LAYA_SCORE)
      printf("%s: score %.4f (confidence %.4f)\n", a.question_id, a.score, a.confidence);
    else
      printf("%s: p(true) %.6f (confidence %.4f)\n", a.question_id, a.noul, a.confidence);
  }
  /* The decoder decision: a device state and a schema, field by field. */
  sr.system = "You watch a pumping station. Decide what the operator should do.";
  sr.state =
      "{\"pump_1\": {\"pressure_bar\": 9.8, \"vibration_mm_s\": 11.2}, \"pump_2\": "
      "{\"state\": \"standby\"}, \"tank_level_pct\": 91}";
  sr.schema = kSchema;
  sr.fallback = "{\"action\": \"shut_down\", \"page_operator\": true}";
  sr.max_tokens = 64;
  s = laya_decide_schema(dctx, &sr, out, sizeof out, &n);
  if (s != LAYA_OK || laya_result_schema(dctx, 0, &res) != LAYA_OK) {
    fprintf(stderr, "decide_schema: %s: %s\n", laya_status_string(s), laya_context_error(dctx));
    return 1;
  }
  printf("decision: %s%s\n", res.decision_json, res.fallback ? " (fallback)" : "");
  for (q = 0; q < res.n_fields; ++q) {
    laya_field f = laya_field_init();
    if (laya_result_field(dctx, 0, q, &f) != LAYA_OK) return 1;
    printf("  %s = %s (p %.4f, confidence %.4f)\n", f.path, f.options[f.chosen],
           f.probabilities[f.chosen], f.confidence);
  }
  if (heap_check_end) heap = heap_check_end();
  if (heap >= 0) printf("heap calls during the decisions: %ld\n", heap);

  laya_context_destroy(dctx);
  laya_context_destroy(ectx);
  laya_model_close(dec);
  laya_model_close(enc);
  return heap > 0 ? 1 : 0;
}
