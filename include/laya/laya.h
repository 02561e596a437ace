/*
 * laya.h: the Laya Runtime C API (C99; also valid C++).
 *
 * From a model file to a decision, in memory the caller owns:
 *
 *   laya_model_params mp = laya_model_default_params();
 *   laya_model* model;
 *   laya_error err;
 *   if (laya_model_open_file("support.laya", &mp, &model, &err) != LAYA_OK) ... err.message ...
 *
 *   laya_context_limits lim = laya_context_default_limits();     -- 0 fields: the defaults
 *   laya_memory_requirements req;
 *   laya_context_requirements(model, &lim, &req, &err);          -- bytes and alignment per region
 *   laya_region regions[LAYA_REGION_COUNT];                      -- the caller's memory: static
 *   ... regions[r].data = <req.size[r] bytes aligned to req.alignment[r]>, .size = req.size[r]
 *   laya_context* ctx;
 *   laya_context_create(model, &lim, regions, &ctx, &err);
 *
 *   char out[8192]; size_t n;
 *   if (laya_decide(ctx, body, body_len, out, sizeof out, &n) == LAYA_OK) ... out: the JSON ...
 *   laya_answer a = laya_answer_init();
 *   laya_result_answer(ctx, 0, 0, &a);                           -- the typed view, no JSON
 *
 *   laya_context_destroy(ctx);  laya_model_close(model);
 *
 * Conventions
 *  - Every function returns a laya_status (or a value that cannot fail). No function aborts,
 *    exits or lets a C++ exception out. Messages: laya_status_string(code) (static text), the
 *    laya_error a call without a context fills (optional: pass NULL), laya_context_error(ctx)
 *    for calls on a context. Making a message never allocates.
 *  - Parameter structs carry struct_size and come from *_default_params() / *_init() (macros that
 *    record the ABI and the size the caller was compiled with, as zlib's inflateInit does). A
 *    struct from a newer header than the library is refused with LAYA_E_ABI_MISMATCH naming both.
 *  - Variable-size outputs: the caller's buffer and its capacity; with out == NULL the call
 *    reports the bytes needed in *out_len and succeeds; a buffer too small gives
 *    LAYA_E_BUFFER_TOO_SMALL with *out_len = the bytes needed (without the terminating NUL,
 *    which is written when it fits). The decision stays in the context: laya_result_json copies
 *    it again without running anything.
 *  - Memory: a model (opening allocates: tables, the graph, packed weights shared by every
 *    context) and contexts on the caller's regions. After laya_context_create, decisions, schema
 *    decisions, generation and tokenization allocate nothing on the heap: requests are parsed,
 *    tokenized, answered and written in the context's work region (sized by the limits; a
 *    request that does not fit is refused, never half-done).
 *  - Threads: a model may be used by any number of threads at once (its contexts share it); a
 *    context by one thread at a time. No global state: the only per-thread state is the request
 *    arena of the call in progress.
 *  - Failure leaves a context usable: its results are cleared and its KV cache holds nothing of
 *    the failed call. Result accessors read the last successful call's results until the next
 *    call on the context.
 *
 * Design notes (what was taken from llama.h, TFLite Micro and ExecuTorch, and what differs):
 * docs/embedding.md.
 */
#ifndef LAYA_H
#define LAYA_H

#include <stddef.h>
#include <stdint.h>

#define LAYA_VERSION_MAJOR 0
#define LAYA_VERSION_MINOR 4
#define LAYA_VERSION_PATCH 0
#define LAYA_VERSION_STRING "0.4.0"
/* MINOR is bumped when entry points are added (the ABI stays; each new section says "since");
 * the ABI version whenever a struct or a signature below changes incompatibly. */
#define LAYA_ABI_VERSION 1

#if defined(_WIN32)
#define LAYA_API
#else
#define LAYA_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ---------------------------------------------------------------------------- */

typedef enum laya_status {
  LAYA_OK = 0,
  LAYA_E_INVALID_ARGUMENT = 1,       /* a null pointer, a bad value, a struct of the wrong size */
  LAYA_E_ABI_MISMATCH = 2,           /* a struct from another ABI version */
  LAYA_E_BUFFER_TOO_SMALL = 3,       /* *out_len holds the bytes needed */
  LAYA_E_MEMORY = 4,                 /* a region too small or misaligned; host memory at open */
  LAYA_E_IO = 5,                     /* a file cannot be read */
  LAYA_E_MODEL_INVALID = 6,          /* not a model, truncated, corrupt, another format version */
  LAYA_E_UNSUPPORTED = 7,            /* the model, a backend or this build cannot do it */
  LAYA_E_REQUEST_INVALID = 8,        /* a malformed request (upstream laya-serve: HTTP 400) */
  LAYA_E_REQUEST_TOO_LARGE = 9,      /* a request over a limit (HTTP 413) */
  LAYA_E_REQUEST_UNPROCESSABLE = 10, /* a request that cannot be answered (HTTP 422) */
  LAYA_E_LIMIT = 11,                 /* over this context's limits (KV cells, options, ...) */
  LAYA_E_DEADLINE = 12,              /* deadline_ms passed, and no fallback */
  LAYA_E_ABORTED = 13,               /* the abort callback stopped the call */
  LAYA_E_BACKEND = 14,               /* a backend failed */
  LAYA_E_INTERNAL = 15               /* a bug: please report it */
} laya_status;

/* Static text of a code ("buffer too small", ...); never NULL. */
LAYA_API const char* laya_status_string(laya_status s);

#define LAYA_ERROR_MESSAGE_MAX 384
/* What a failed call without a context reports: its code and message (NUL-terminated). */
typedef struct laya_error {
  laya_status code;
  char message[LAYA_ERROR_MESSAGE_MAX];
} laya_error;

/* ---- version --------------------------------------------------------------------------- */

LAYA_API const char* laya_version(void); /* "0.4.0" */
LAYA_API uint32_t laya_abi_version(void);

/* ---- logging --------------------------------------------------------------------------- */

typedef enum laya_log_level {
  LAYA_LOG_ERROR = 0,
  LAYA_LOG_WARN = 1,
  LAYA_LOG_INFO = 2
} laya_log_level;
/* Called from the thread that makes the event; `message` is valid for the call only. */
typedef void (*laya_log_fn)(void* user, laya_log_level level, const char* message);

/* ---- models ---------------------------------------------------------------------------- */

typedef struct laya_model laya_model;

typedef enum laya_verify {
  LAYA_VERIFY_FULL = 0,   /* every check of the loader (the default) */
  LAYA_VERIFY_TRUSTED = 1 /* skip the FlatBuffers table verifier: for images that are trusted */
} laya_verify;

typedef struct laya_model_params {
  size_t struct_size;
  uint32_t abi_version;
  laya_verify verify;
  /* Comma-separated backends in order of preference; NULL: "cpu". Nodes a backend refuses run
   * on the CPU. */
  const char* backends;
  /* The CPU kernels: "auto" (the best this CPU runs), "ref" (scalar references) or a Highway
   * target name; NULL: auto. */
  const char* kernels;
  int32_t n_threads;   /* CPU threads per context (0: every core this process may use) */
  const char* kv_type; /* a GGUF decoder's KV cache: "f16" (NULL: the default) or "f32" */
  laya_log_fn log;     /* optional */
  void* log_user;
} laya_model_params;

LAYA_API laya_model_params laya_model_default_params_(uint32_t abi_version, size_t struct_size);
#define laya_model_default_params() \
  laya_model_default_params_(LAYA_ABI_VERSION, sizeof(laya_model_params))

/* A .laya file (an encoder decision model, or a decoder) or a GGUF decoder (llama / qwen2), by
 * its first bytes. The file is mapped read-only, never copied. */
LAYA_API laya_status laya_model_open_file(const char* path, const laya_model_params* params,
                                          laya_model** out, laya_error* err);
/* The same over `size` bytes at `data`, zero-copy: the caller keeps them alive and unchanged
 * until laya_model_close. A .laya image must be 64-byte aligned. */
LAYA_API laya_status laya_model_open_memory(const void* data, size_t size,
                                            const laya_model_params* params, laya_model** out,
                                            laya_error* err);
/* Frees the model. Every context of it must be destroyed first. NULL is a no-op. */
LAYA_API void laya_model_close(laya_model* model);

typedef enum laya_model_kind { LAYA_MODEL_ENCODER = 1, LAYA_MODEL_DECODER = 2 } laya_model_kind;

/* Strings are the model's: valid until laya_model_close. */
typedef struct laya_model_info {
  size_t struct_size;
  laya_model_kind kind;
  const char* name;          /* general.name, the checkpoint's directory or the file's name */
  const char* architecture;  /* "laya", "llama", "qwen2" */
  const char* format;        /* "laya 1.5", "gguf" */
  const char* source;        /* provenance: what it was converted from */
  const char* converter;     /* provenance: the converter and its version */
  const char* source_sha256; /* provenance: the first source file's sha256 ("" when none) */
  const char* weight_dtypes; /* e.g. "f32,q4_1" */
  const char* chat_format;   /* decoders: "chatml", "llama3", "" (no template this build renders) */
  uint64_t weight_bytes;
  int64_t parameters;
  int32_t vocab_size;
  int32_t layers;
  int32_t hidden_size;
  int64_t max_tokens;  /* encoders: tokens of one pass; decoders: the context length */
  int64_t max_options; /* encoders: options of one question; decoders: 26 (labels A..Z) */
  int32_t max_len;     /* encoders: the decision settings' max_len / head_max_len */
  int32_t head_max_len;
  double temperature[3]; /* choice, score, noul (1: uncalibrated) */
} laya_model_info;

LAYA_API laya_model_info laya_model_info_init_(uint32_t abi_version, size_t struct_size);
#define laya_model_info_init() laya_model_info_init_(LAYA_ABI_VERSION, sizeof(laya_model_info))
LAYA_API laya_status laya_model_info_get(const laya_model* model, laya_model_info* out);

/* ---- contexts ---------------------------------------------------------------------------- */

typedef struct laya_context laya_context;

/* What a context must hold. 0 fields take the defaults, given in brackets. */
typedef struct laya_context_limits {
  size_t struct_size;
  uint32_t abi_version;
  /* encoders */
  int64_t max_tokens;  /* tokens of one forward pass, every row packed [min(model, 4096)] */
  int64_t max_rows;    /* question rows of one pass [the model's bound] */
  int64_t max_options; /* options of one question [the model's bound] */
  /* both */
  uint64_t max_request_bytes; /* the largest request body [2 MiB, upstream's server limit] */
  int64_t max_batch;          /* bodies laya_decide_batch takes at once [16] */
  /* decoders */
  int64_t kv_cells;            /* the working sequence: prompt and answer [min(context, 2048)] */
  int64_t prefix_slots;        /* prompt prefixes the prefix cache keeps [4] */
  uint64_t prefix_cache_bytes; /* their KV bytes together [those of kv_cells / 2 cells] */
  int64_t prefix_block;        /* tokens per cached block [16] */
  int64_t chunk;               /* prefill chunk in tokens [128] */
  /* both */
  int32_t n_threads;    /* CPU threads [the model's] */
  uint64_t arena_bytes; /* the request arena [sized from the limits above] */
} laya_context_limits;

LAYA_API laya_context_limits laya_context_default_limits_(uint32_t abi_version, size_t struct_size);
#define laya_context_default_limits() \
  laya_context_default_limits_(LAYA_ABI_VERSION, sizeof(laya_context_limits))

typedef enum laya_region_kind {
  LAYA_REGION_WEIGHTS = 0,     /* packed weights the model does not share (e.g. an NPU's) */
  LAYA_REGION_ACTIVATIONS = 1, /* the network's activations at the limits */
  LAYA_REGION_SCRATCH = 2,     /* per-execute scratch */
  LAYA_REGION_KV = 3,          /* decoders: the KV cache and the prefix cache's cells */
  LAYA_REGION_WORK = 4,        /* the context, its I/O buffers and the request arena */
  LAYA_REGION_COUNT = 5
} laya_region_kind;

typedef struct laya_region {
  void* data;
  size_t size;
} laya_region;

typedef struct laya_memory_requirements {
  size_t struct_size;
  uint64_t size[LAYA_REGION_COUNT];      /* bytes; 0: the region may be NULL */
  uint64_t alignment[LAYA_REGION_COUNT]; /* a power of two, at least 64 */
  uint64_t model_shared_bytes;           /* packed weights the model holds once for all contexts */
  laya_context_limits limits;            /* the limits with every default filled in */
} laya_memory_requirements;

LAYA_API laya_memory_requirements laya_memory_requirements_init_(uint32_t abi_version,
                                                                 size_t struct_size);
#define laya_memory_requirements_init() \
  laya_memory_requirements_init_(LAYA_ABI_VERSION, sizeof(laya_memory_requirements))

/* Bytes and alignment of every region a context of these limits needs (`limits` NULL: the
 * defaults). Prepares the network to measure it (allocates; no memory is kept). */
LAYA_API laya_status laya_context_requirements(const laya_model* model,
                                               const laya_context_limits* limits,
                                               laya_memory_requirements* out, laya_error* err);
/* A context on the caller's regions (regions[LAYA_REGION_COUNT], each at least the size
 * laya_context_requirements gave and aligned as it said; borrowed until laya_context_destroy).
 * The laya_context object itself lives at the start of the work region. */
LAYA_API laya_status laya_context_create(laya_model* model, const laya_context_limits* limits,
                                         const laya_region* regions, laya_context** out,
                                         laya_error* err);
/* Ends the context; its regions are the caller's again. NULL is a no-op. */
LAYA_API void laya_context_destroy(laya_context* ctx);
/* The message of the last failed call on `ctx` ("" after a success); valid until the next call. */
LAYA_API const char* laya_context_error(const laya_context* ctx);

typedef struct laya_context_stats {
  size_t struct_size;
  uint64_t arena_bytes;      /* the request arena's size */
  uint64_t arena_high_water; /* the most it has held */
  uint64_t arena_overflows;  /* allocations that did not fit (and went to the heap): 0 */
  uint64_t calls;            /* calls made on the context */
} laya_context_stats;
LAYA_API laya_context_stats laya_context_stats_init_(uint32_t abi_version, size_t struct_size);
#define laya_context_stats_init() \
  laya_context_stats_init_(LAYA_ABI_VERSION, sizeof(laya_context_stats))
LAYA_API laya_status laya_context_stats_get(const laya_context* ctx, laya_context_stats* out);

/* ---- decisions --------------------------------------------------------------------------- */

/* A /v1/systemone request body (upstream laya-serve's), or on a decoder its questions or schema
 * body: the SDK's result JSON (exactly what laya-run decide prints) into out[out_capacity]. */
LAYA_API laya_status laya_decide(laya_context* ctx, const char* body, size_t body_len, char* out,
                                 size_t out_capacity, size_t* out_len);

/* Whose checks laya_decide / laya_decide_batch apply to an encoder's body on this context.
 *  LAYA_RULES_SERVER  upstream laya-serve's /v1/systemone (the default): its request limits (64
 *                     questions, 100 choice options, 32 score levels, 512 options in all, 50,000
 *                     state characters, 1..64 states, 2 MiB bodies) and refusals, then the SDK's.
 *  LAYA_RULES_SDK     the SDK called in process (Agent.predict / predict_batch / decide with the
 *                     body's fields as arguments): only what the SDK itself raises, with its
 *                     messages; empty `states` answer []. The context's own limits still hold
 *                     (max_request_bytes, max_tokens, ...). */
typedef enum laya_request_rules { LAYA_RULES_SERVER = 0, LAYA_RULES_SDK = 1 } laya_request_rules;
LAYA_API laya_status laya_context_set_rules(laya_context* ctx, laya_request_rules rules);

/* Several request bodies answered together (an encoder packs their rows into shared forward
 * passes; every result is byte-identical to the body alone). items[i].status is body i's; its
 * JSON is at out + items[i].json_offset, items[i].json_len bytes (NUL-terminated), or for a
 * body that failed, its message (what laya_context_error gives after laya_decide of it alone).
 * Returns LAYA_OK when the bodies were processed (each may still have failed on its own). */
typedef struct laya_batch_item {
  const char* body;
  size_t body_len;
  laya_status status; /* out */
  size_t json_offset; /* out */
  size_t json_len;    /* out */
} laya_batch_item;
LAYA_API laya_status laya_decide_batch(laya_context* ctx, laya_batch_item* items, size_t n_items,
                                       char* out, size_t out_capacity, size_t* out_len);

/* The JSON of the last laya_decide / laya_decide_schema again (nothing is run). */
LAYA_API laya_status laya_result_json(const laya_context* ctx, char* out, size_t out_capacity,
                                      size_t* out_len);

/* The typed view of the last decision (laya_decide with questions). */
typedef enum laya_question_type {
  LAYA_CHOICE = 0,
  LAYA_SCORE = 1,
  LAYA_NOUL = 2
} laya_question_type;
typedef enum laya_abstention {
  LAYA_ABSTENTION_NONE = 0, /* no min_confidence gate */
  LAYA_ABSTENTION_PASSED = 1,
  LAYA_ABSTENTION_ABSTAINED = 2,
  LAYA_ABSTENTION_UNEVALUATED = 3
} laya_abstention;

typedef struct laya_answer {
  size_t struct_size;
  const char* question_id; /* NUL-terminated */
  laya_question_type type;
  int32_t n_options;
  const float* probabilities; /* n_options, label order, unrounded */
  int32_t choice;             /* choice: the chosen option's index; else -1 */
  const char* choice_label;   /* choice: its label as the JSON key writes it ("1", "true", ...) */
  double score;               /* score: sum i * p_i */
  double noul;                /* noul: p(true) */
  double confidence;
  double answer_confidence;
  laya_abstention abstention;
  double abstention_threshold;
  int32_t has_action; /* 1 when the model has an act head */
  double act_probability;
} laya_answer;
LAYA_API laya_answer laya_answer_init_(uint32_t abi_version, size_t struct_size);
#define laya_answer_init() laya_answer_init_(LAYA_ABI_VERSION, sizeof(laya_answer))

typedef struct laya_usage {
  size_t struct_size;
  int64_t input_tokens;
  int64_t output_tokens;
  int64_t state_tokens;         /* encoders */
  int64_t state_tokens_dropped; /* encoders: the most any row dropped */
  int64_t truncated_questions;  /* encoders */
  int64_t prefill_tokens;       /* decoders: prompt tokens run */
  int64_t prefix_hit_tokens;    /* decoders: prompt tokens the prefix cache gave */
} laya_usage;
LAYA_API laya_usage laya_usage_init_(uint32_t abi_version, size_t struct_size);
#define laya_usage_init() laya_usage_init_(LAYA_ABI_VERSION, sizeof(laya_usage))

/* States answered (1, or the length of a body's `states`), and questions per state. */
LAYA_API size_t laya_result_states(const laya_context* ctx);
LAYA_API size_t laya_result_questions(const laya_context* ctx);
/* Pointers in `out` stay valid until the next call on the context. */
LAYA_API laya_status laya_result_answer(const laya_context* ctx, size_t state, size_t question,
                                        laya_answer* out);
LAYA_API laya_status laya_result_usage(const laya_context* ctx, size_t state, laya_usage* out);
/* Option `i`'s label of a question of the last decision (choice: the JSON key text; score: the
 * level "0".."k-1"; noul: "false" / "true"). */
LAYA_API laya_status laya_result_option(const laya_context* ctx, size_t question, size_t option,
                                        const char** label);

/* ---- decoders: schema decisions, generation, scoring -------------------------------------- */

typedef struct laya_sampling {
  float temperature; /* 0: greedy (the default) */
  int32_t top_k;     /* 0: all */
  float top_p;       /* 1 (or 0): all */
  uint64_t seed;
} laya_sampling;

typedef struct laya_schema_request {
  size_t struct_size;
  uint32_t abi_version;
  const char* system; /* NULL: the chat template's default system prompt */
  const char* state;  /* the device state: JSON text (or plain text with state_is_text) */
  int32_t state_is_text;
  const char* schema;    /* a JSON schema (objects, enums, booleans, bounded numbers, strings) */
  const char* fallback;  /* JSON, or NULL: the schema's `default`, else none */
  int64_t max_tokens;    /* 0: 256 */
  int64_t deadline_ms;   /* 0: none */
  double min_confidence; /* fields below it need review; < 0: none */
  laya_sampling sampling;
} laya_schema_request;
LAYA_API laya_schema_request laya_schema_request_init_(uint32_t abi_version, size_t struct_size);
#define laya_schema_request_init() \
  laya_schema_request_init_(LAYA_ABI_VERSION, sizeof(laya_schema_request))

/* Compiles a schema's grammar over a decoder's vocabulary ahead of its decisions (a load step:
 * allocates, and keeps it for the model's lifetime). A decision whose schema was not compiled
 * compiles it on first use, which allocates on the heap then. Thread-safe. */
LAYA_API laya_status laya_model_compile_schema(const laya_model* model, const char* schema,
                                               size_t schema_len, laya_error* err);

/* A decision generated under the schema's grammar (it cannot be invalid), each enum / boolean
 * field scored option by option: the JSON laya-run decide prints for a schema body. */
LAYA_API laya_status laya_decide_schema(laya_context* ctx, const laya_schema_request* req,
                                        char* out, size_t out_capacity, size_t* out_len);

typedef struct laya_field {
  size_t struct_size;
  const char* path; /* "action", "rooms[1].mode", "$" */
  int32_t n_options;
  const char* const* options;  /* the option texts (JSON) */
  const double* probabilities; /* unrounded */
  int32_t chosen;
  double confidence;
  int32_t needs_review;
} laya_field;
LAYA_API laya_field laya_field_init_(uint32_t abi_version, size_t struct_size);
#define laya_field_init() laya_field_init_(LAYA_ABI_VERSION, sizeof(laya_field))

typedef struct laya_schema_result {
  size_t struct_size;
  const char* decision_json; /* the decision (or the fallback), compact JSON */
  int32_t fallback;          /* 1: the fallback answered (max_tokens or the deadline ran out) */
  size_t n_fields;
  int64_t input_tokens, prefix_hit_tokens, output_tokens;
  double ttft_ms, prefill_ms, decode_tokens_per_s;
} laya_schema_result;
LAYA_API laya_schema_result laya_schema_result_init_(uint32_t abi_version, size_t struct_size);
#define laya_schema_result_init() \
  laya_schema_result_init_(LAYA_ABI_VERSION, sizeof(laya_schema_result))
LAYA_API laya_status laya_result_schema(const laya_context* ctx, size_t state,
                                        laya_schema_result* out);
LAYA_API laya_status laya_result_field(const laya_context* ctx, size_t state, size_t field,
                                       laya_field* out);

/* Per generated token: its id and bytes (valid for the call); return nonzero to stop there. */
typedef int (*laya_token_fn)(void* user, int32_t token, const char* piece, size_t piece_len);
/* Polled between steps: return nonzero to abort the call (LAYA_E_ABORTED). */
typedef int (*laya_abort_fn)(void* user);

/* Profiling: after the call, each node's measured time summed over the prefill (phase 0) or over
 * every decode step (phase 1); `node` names its kind ("matmul q4_1 [576, 1536]", "attention");
 * several nodes may share a kind. */
typedef void (*laya_profile_fn)(void* user, int32_t phase, const char* node, double ms);

typedef struct laya_message {
  const char* role; /* "system", "user", "assistant" */
  const char* content;
} laya_message;

typedef struct laya_generate_params {
  size_t struct_size;
  uint32_t abi_version;
  /* exactly one prompt form: */
  const char* prompt;           /* raw text (BOS as the vocabulary says) */
  const laya_message* messages; /* a chat, rendered with the model's template */
  size_t n_messages;            /* at most 64 */
  const int32_t* prompt_ids;    /* token ids */
  size_t n_prompt_ids;
  int64_t max_tokens; /* new tokens [16] */
  laya_sampling sampling;
  int32_t stop_after_json; /* also stop when the reply's first JSON object closes */
  int32_t no_prefix_cache; /* 1: do not reuse or store prompt prefixes */
  laya_token_fn on_token;
  void* on_token_user;
  laya_abort_fn abort;
  void* abort_user;
  laya_profile_fn profile; /* optional: per-node times (costs a clock read per node) */
  void* profile_user;
} laya_generate_params;
LAYA_API laya_generate_params laya_generate_params_init_(uint32_t abi_version, size_t struct_size);
#define laya_generate_params_init() \
  laya_generate_params_init_(LAYA_ABI_VERSION, sizeof(laya_generate_params))

/* Generates: the new tokens' text (special tokens skipped) into out. */
LAYA_API laya_status laya_generate(laya_context* ctx, const laya_generate_params* p, char* out,
                                   size_t out_capacity, size_t* out_len);

/* The text of the last laya_generate again (nothing is run). */
LAYA_API laya_status laya_result_text(const laya_context* ctx, char* out, size_t out_capacity,
                                      size_t* out_len);

typedef struct laya_generation {
  size_t struct_size;
  const int32_t* prompt_ids;
  size_t n_prompt_ids;
  const int32_t* ids; /* the new tokens (a stop token included) */
  size_t n_ids;
  const char* finish_reason; /* "stop", "length", "json", "callback" */
  double load_ms, prefill_ms, first_token_ms, total_ms, decode_tokens_per_s;
  int64_t prefill_chunks, prefix_hit_tokens, decode_steps;
  /* where decoding spent its time, summed over the decode steps (ms): the steps, the part of
   * them inside the network's execute, the sampler; and the prefill's part inside execute */
  double decode_step_ms, decode_execute_ms, decode_pick_ms, prefill_execute_ms;
  int64_t prefix_lookups, prefix_hits, prefix_misses, prefix_evictions, prefix_cached_tokens;
  int64_t prefix_block_tokens;
} laya_generation;
LAYA_API laya_generation laya_generation_init_(uint32_t abi_version, size_t struct_size);
#define laya_generation_init() laya_generation_init_(LAYA_ABI_VERSION, sizeof(laya_generation))
LAYA_API laya_status laya_result_generation(const laya_context* ctx, laya_generation* out);

/* Teacher forcing: the ids prefilled, fn called after each with its next-token logits (vocab
 * floats, valid for the call). */
typedef void (*laya_logits_fn)(void* user, size_t position, const float* logits, size_t vocab);
LAYA_API laya_status laya_score(laya_context* ctx, const int32_t* ids, size_t n_ids,
                                laya_logits_fn fn, void* user);

/* Set how laya_decide samples a decoder's schema decisions (greedy by default). */
LAYA_API laya_status laya_context_set_sampling(laya_context* ctx, const laya_sampling* s);

/* Streaming for the decoder schema decisions that follow on this context (laya_decide and
 * laya_decide_batch on a schema body, laya_decide_schema): on_token gets each token committed to
 * the decision's text as it is committed (forced text, sampled tokens, a scored field's chosen
 * option; their pieces concatenated are the decision's JSON text), and abort is polled before
 * each step. Nonzero from either stops the decision: LAYA_E_ABORTED, no fallback. NULL: none. */
LAYA_API laya_status laya_context_set_stream(laya_context* ctx, laya_token_fn on_token,
                                             laya_abort_fn abort, void* user);

/* ---- language ------------------------------------------------------------------------------ */

/* The script and language of a state (`state_json`: its JSON value: a string, an object, a list),
 * as the upstream SDK's laya.detect_language (laya.lang.analyse) returns them: a JSON object
 * ("script", "script_profile", "language", "is_english", ...; with `explain`, "diagnostic") into
 * out[out_capacity]. Needs no model; allocates (it is not a context's call). Malformed JSON is
 * LAYA_E_REQUEST_INVALID with the message in `err`. */
LAYA_API laya_status laya_detect_language(const char* state_json, size_t len, int32_t explain,
                                          char* out, size_t out_capacity, size_t* out_len,
                                          laya_error* err);

/* ---- routing (since 0.4) ------------------------------------------------------------------- */

/* Which Laya checkpoint answers a request: the upstream SDK's laya.Router(...).route(...) (laya
 * 0.4.15), loading nothing (runtime/decisions/router.h has the rules).
 *   options_json  the Router's data arguments, a JSON object (NULL / length 0: the defaults):
 *                 "default" (a checkpoint name or alias ["multilingual"]), "auto_task_detection",
 *                 "standalone_repos" (booleans), "models" ({name: source}: re-points a built-in
 *                 checkpoint or registers one; the source is reported as its "repo"),
 *                 "lang_guess" (a language code applied to every request, or null).
 *   query_json    route()'s arguments, a JSON object: "state", "questions", "model", "task",
 *                 "lang", "lang_guess" (absent: None), "explain" (a boolean).
 * Writes the RouteDecision {"model", "repo", "reason", "detection", "workflow"} into
 * out[out_capacity]. Refusals carry upstream's message in `err`: LAYA_E_REQUEST_UNPROCESSABLE
 * where upstream raises ValueError (an unknown model, an invalid checkpoint name),
 * LAYA_E_REQUEST_INVALID where it raises TypeError (questions not a dict) and for malformed JSON
 * or an unknown key. Needs no model; allocates (it is not a context's call). */
LAYA_API laya_status laya_route(const char* options_json, size_t options_len,
                                const char* query_json, size_t query_len, char* out,
                                size_t out_capacity, size_t* out_len, laya_error* err);

/* ---- tournament (since 0.4) ---------------------------------------------------------------- */

/* A choice narrowed by elimination: the upstream SDK's laya.predict_tournament(agent, state,
 * questions, group_size) (shortlist.py; runtime/decisions/tournament.h). Every choice with more
 * than group_size labels is cut, in criteria order, into groups of near-equal size; one call
 * answers every group (as questions "0", "1", ...), the group winners meet in the next round, and
 * a final call answers the request's questions with each such choice cut to its finalists. The
 * result is the final call's reply plus "tournament": {question id: {"labels": the finalists,
 * "n": the labels before the first round, "rounds": r}} for every choice question.
 *
 * One call on an encoder context: `body` is a /v1/systemone body ("state", "questions" and the
 * options every call takes: "lang", "max_len", "head_max_len", "min_confidence"); each call is
 * laya_decide of it with that call's questions, under the context's rules. group_size >= 2.
 * Unlike laya_decide this allocates on the heap (the rounds' JSON between calls). The result JSON
 * is kept as laya_result_json gives it; the typed view (laya_result_answer) is the final call's.
 * Refusals of the questions (before any call) are upstream's: LAYA_E_REQUEST_UNPROCESSABLE for
 * its ValueError (a choice without criteria, empty or repeated labels), LAYA_E_REQUEST_INVALID
 * for its TypeError (criteria neither a dict nor a list, questions not a dict). */
LAYA_API laya_status laya_predict_tournament(laya_context* ctx, const char* body, size_t body_len,
                                             int32_t group_size, char* out, size_t out_capacity,
                                             size_t* out_len);

/* The same rounds driven by the caller, for calls this library does not make (another model per
 * round, a remote agent): create from the questions (JSON object), then while !done: next gives
 * the questions of the next call, answer takes that call's reply (its result JSON); result gives
 * the tournament's result. Refusals as laya_predict_tournament's, and a reply that is not an
 * object, or a round's reply whose "answers" is not one (LAYA_E_REQUEST_INVALID, upstream's
 * TypeError), or that lacks a group's "choice" (LAYA_E_REQUEST_UNPROCESSABLE). A tournament is
 * one thread's at a time; it allocates on the heap. */
typedef struct laya_tournament laya_tournament;
LAYA_API laya_status laya_tournament_create(const char* questions_json, size_t len,
                                            int32_t group_size, laya_tournament** out,
                                            laya_error* err);
/* 1 when the result is ready (no call left), else 0; 0 for NULL. */
LAYA_API int32_t laya_tournament_done(const laya_tournament* t);
/* The next call's questions (a JSON object) into out; *final_call (optional): 1 for the final
 * call. LAYA_E_INVALID_ARGUMENT once done. */
LAYA_API laya_status laya_tournament_next(const laya_tournament* t, char* out, size_t out_capacity,
                                          size_t* out_len, int32_t* final_call);
LAYA_API laya_status laya_tournament_answer(laya_tournament* t, const char* result_json, size_t len,
                                            laya_error* err);
/* The result JSON (LAYA_E_INVALID_ARGUMENT before done). */
LAYA_API laya_status laya_tournament_result(const laya_tournament* t, char* out,
                                            size_t out_capacity, size_t* out_len);
/* NULL is a no-op. */
LAYA_API void laya_tournament_free(laya_tournament* t);

/* ---- tokens -------------------------------------------------------------------------------- */

/* The model's tokenizer: ids into ids[capacity] (*n_ids: how many; LAYA_E_BUFFER_TOO_SMALL when
 * more). add_special: the model's special-token template (an encoder's [CLS] ... [SEP], a
 * decoder's BOS). */
LAYA_API laya_status laya_tokenize(laya_context* ctx, const char* text, size_t text_len,
                                   int32_t add_special, int32_t* ids, size_t capacity,
                                   size_t* n_ids);
LAYA_API laya_status laya_detokenize(laya_context* ctx, const int32_t* ids, size_t n_ids,
                                     int32_t skip_special, char* out, size_t out_capacity,
                                     size_t* out_len);

#ifdef __cplusplus
}
#endif

#endif /* LAYA_H */
