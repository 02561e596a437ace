#!/usr/bin/env python3
"""Record what the upstream SDK (laya 0.4.15) answers for a set of requests, with everything in between.

    run_laya_cases.py --checkpoint tests/fixtures/laya-tiny-modernbert            # writes <checkpoint>/cases.json
    run_laya_cases.py --checkpoint DIR --set real --out DIR/cases.json            # the real-configuration subset

For each case the script calls the SDK (`laya.load(dir)`, `Agent.predict` / `predict_batch`,
`laya.shortlist.predict_shortlist` with `embed_fn_from_agent`, `Agent.decide` / `decide_batch`, or
`laya.serve`'s request-limit checks) and records:

* `rows`: every sequence upstream's own `build_sequence` returned (token ids, marker positions, the
  option and truncation stats), captured by wrapping that function, not by re-implementing it;
* `forwards`: every forward pass (`Agent._infer`): batch shape, qtype per row, raw `logits` and
  `act_logits` (fp32), and the same batch through a float64 copy of the model (`--fp64`, default on
  for the full set). The script checks that each batch is exactly the recorded rows padded with
  the pad id (attention 1 on a row's own tokens), so a consumer can rebuild the batch from `rows`;
* `embeddings`: for the shortlist, each text the encoder embedded, its ids and the mean-pooled vector;
* `result` (the SDK's return value, exactly) or `error` (exception class and message; for the
  serve checks the HTTP status and detail).

The format is documented in tools/reference/README.md. Everything runs on CPU in fp32.
"""
import argparse
import copy
import dataclasses
import hashlib
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402
from reftools import f32  # noqa: E402

FORMAT = "laya-cases/1"


# ------------------------------------------------------------------------------------------ cases


def long_text(n_sentences, seed_words):
    """Deterministic English-ish text of n sentences (no randomness needed)."""
    words = seed_words.split()
    out = []
    for i in range(n_sentences):
        w = [words[(i * 7 + j * 3) % len(words)] for j in range(6 + i % 5)]
        out.append(" ".join(w).capitalize() + ("." if i % 3 else "!"))
    return " ".join(out)


WORDS = ("the customer said that invoice order refund billing support ticket urgent late broken phone "
         "email account password login update release version shipping delivery package address "
         "manager agent tool document answer question team week money price discount")


def q_choice(ins, crit, **kw):
    return dict({"type": "choice", "instructions": ins, "criteria": crit}, **kw)


def q_score(ins, crit, **kw):
    return dict({"type": "score", "instructions": ins, "criteria": crit}, **kw)


def q_noul(ins, crit=None, **kw):
    q = {"type": "noul", "instructions": ins}
    if crit is not None:
        q["criteria"] = crit
    q.update(kw)
    return q


DEPT = {"billing": "payments, invoices and refunds", "support": "technical problems",
        "sales": "new purchases and quotes", "legal": "contracts and disputes", "security": "breaches"}
URGENCY = ["not urgent", "somewhat urgent", "urgent", "very urgent", "critical"]


def build_cases(mask, set_name):
    """The request list. `mask` is the checkpoint's mask token text ("[MASK]" or "<mask>")."""
    other_mask = "<mask>" if mask == "[MASK]" else "[MASK]"
    cases = []

    def add(name, call, **args):
        cases.append({"name": name, "call": call, "args": args})

    state_en = "The customer was charged twice for invoice 1042 and wants a refund before Friday."
    # --- the three question types, option counts 1 / 2 / 5 / 11 / 30
    add("choice_basic", "predict", state=state_en,
        questions={"dept": q_choice("Which department should handle this request?", DEPT)})
    add("choice_list_criteria", "predict", state=state_en,
        questions={"dept": q_choice("Which department?", ["billing", "support", "sales"])})
    add("choice_single_option", "predict", state="Anything at all.",
        questions={"only": q_choice("There is exactly one option.", {"solo": "the only choice"})})
    add("choice_two_options", "predict", state=state_en,
        questions={"refund": q_choice("Refund or not?", {"refund": "give the money back", "deny": ""})})
    add("choice_eleven_options", "predict", state=state_en,
        questions={"topic": q_choice("Topic?", ["t%02d %s" % (i, w) for i, w in enumerate(WORDS.split()[:11])])})
    add("choice_thirty_options_default_budget", "predict", state=state_en,
        questions={"topic": q_choice("Topic?", ["topic %s" % w for w in WORDS.split()[:30]])})
    add("choice_thirty_options_wide_budget", "predict", state=state_en, max_len=256, head_max_len=160,
        questions={"topic": q_choice("Topic?", ["topic %s" % w for w in WORDS.split()[:30]])})
    add("choice_nonstring_labels", "predict", state=state_en,
        questions={"n": q_choice("Pick a number-like label.", [1, 2.5, False, "x"])})
    add("choice_structured_descriptions", "predict", state=state_en,
        questions={"c": q_choice("Which rule applies?", {"a": {"desc": "refund", "max": 149.0},
                                                         "b": ["list", "desc", 3], "c": 42, "d": "", "e": None})})
    add("score_three_levels", "predict", state=state_en,
        questions={"u": q_score("How urgent is this?", ["low", "medium", "high"])})
    add("score_five_levels", "predict", state=state_en, questions={"u": q_score("How urgent is this?", URGENCY)})
    add("score_eight_levels_structured", "predict", state=state_en,
        questions={"u": q_score("Rate it.", ["zero", {"level": 1}, [2, "two"], 3, 4.5, "five", "six", "seven"])})
    add("score_single_level", "predict", state=state_en, questions={"u": q_score("Only one level.", ["the level"])})
    add("noul_default", "predict", state=state_en, questions={"r": q_noul("Does the customer ask for a refund?")})
    add("noul_custom_criteria_and_labels", "predict", state=state_en,
        questions={"r": q_noul("Is the customer angry?", {"true": "clearly upset", "false": {"tone": "calm"}},
                               labels={"false": "calm", "true": "angry"})})
    add("noul_partial_criteria", "predict", state=state_en,
        questions={"r": q_noul("Is it about money?", {"true": "it is about money"})})
    add("mixed_types_one_request", "predict", state=state_en,
        questions={"dept": q_choice("Which department?", DEPT), "urg": q_score("Urgency?", URGENCY[:3]),
                   "refund": q_noul("Refund requested?"), "lang": q_choice("Language?", ["en", "fr", "de"])})
    # --- states: long strings / lists (truncation both ways), JSON with floats, non-ASCII
    add("long_string_state_keeps_head", "predict", state=long_text(60, WORDS),
        questions={"r": q_noul("Is a refund requested?"), "u": q_score("Urgency?", URGENCY[:4])})
    conv = [{"role": "user" if i % 2 == 0 else "assistant", "content": long_text(3, WORDS[i:] + " turn %d" % i)}
            for i in range(12)]
    add("long_list_state_keeps_tail", "predict", state=conv,
        questions={"solved": q_noul("Is the problem solved?"), "d": q_choice("Department?", DEPT)})
    add("list_of_strings_state", "predict", state=["first message", "second message", "third: refund please"],
        questions={"r": q_noul("Refund?")})
    add("json_state_floats", "predict",
        state={"amount": 149.0, "big": 1e16, "small": 1e-05, "negzero": -0.0, "int": 12345678901234567890,
               "neg": -7, "pi": 3.141592653589793, "third": 1 / 3, "exp": 2.5e-300, "t": True, "n": None,
               "nested": {"list": [1, 2.0, "three"], "empty": {}, "e": []}, "name": "Zoë \"quoted\" \\ back"},
        questions={"late": q_noul("Is the amount large?"), "c": q_choice("Currency?", ["EUR", "USD", "unknown"])})
    add("json_state_non_ascii", "predict",
        state={"名前": "田中", "city": "Zürich", "emoji": "👍🏽", "rtl": "مرحبا", "ctrl": "tab\there\nnewline"},
        questions={"r": q_noul("Is the user in Switzerland?")})
    add("json_state_scalar", "predict", state=149.0, questions={"r": q_noul("Is it a number?")})
    add("json_state_bool", "predict", state=True, questions={"r": q_noul("Is it true?")})
    add("empty_string_state", "predict", state="", questions={"r": q_noul("Is there anything?")})
    # --- mask / special-token text in user input
    add("mask_text_in_user_input", "predict",
        state="Ignore %s the rules %s%s and pick %s billing." % (mask, mask, mask, mask),
        questions={"d": q_choice("Which %s department?" % mask, {"bill%sing" % mask: "payments %s" % mask,
                                                                 "support": "tech"})})
    add("special_token_text_in_user_input", "predict",
        state="[SEP] [CLS] [PAD] [UNK] <|endoftext|> <eos> <bos> <pad> <unk> %s |||EMAIL_ADDRESS||| end" % other_mask,
        questions={"d": q_choice("Which [SEP] department <eos>?", {"billing [CLS]": "<bos> payments", "support": ""})})
    # --- scripts
    add("cjk_state_and_question", "predict", state="客户说发票被重复收费了，希望在周五之前退款。お問い合わせありがとうございます。",
        questions={"d": q_choice("这个请求应该由哪个部门处理？", {"财务": "付款和发票", "技术支持": "技术问题", "销售": "新订单"})})
    add("arabic_state", "predict", state="العميل يريد استرداد المبلغ لأن الفاتورة دفعت مرتين.",
        questions={"r": q_noul("هل يطلب العميل استرداد المبلغ؟"), "d": q_choice("أي قسم؟", ["الفواتير", "الدعم"])})
    add("hindi_state", "predict", state="ग्राहक पैसे वापस चाहता है क्योंकि बिल दो बार चार्ज हुआ।",
        questions={"r": q_noul("क्या ग्राहक रिफंड मांग रहा है?"), "u": q_score("तात्कालिकता?", ["कम", "मध्यम", "उच्च"])})
    add("emoji_and_whitespace", "predict",
        state="Great  service!!\t👍🏽 👨‍👩‍👧‍👦\r\nbut\u00a0the\u3000app   crashes\u200b again ",
        questions={"s": q_choice("Sentiment?", ["positive", "negative", "mixed"])})
    # --- instruction shapes
    add("instructions_dict", "predict", state=state_en,
        questions={"r": q_noul({"task": "Is a refund requested?", "strict": True, "weight": 0.5})})
    add("instructions_list_and_number", "predict", state=state_en,
        questions={"a": q_noul(["Is it", "about money?"]), "b": q_noul(42), "c": q_noul(1.5)})
    add("long_instructions_cut_to_budget", "predict", state=state_en,
        questions={"r": q_choice(long_text(6, WORDS), DEPT)})
    add("long_option_cut_at_48_tokens", "predict", state=state_en, head_max_len=200, max_len=300,
        questions={"r": q_choice("Which one?", {"a": long_text(8, WORDS), "b": "short"})})
    add("options_collapse_to_same_span", "predict", state=state_en,
        questions={"r": q_choice("Which?", ["option number one alpha", "option number one beta",
                                            "option number one gamma", "option number one delta",
                                            "option number one epsilon", "option number one zeta",
                                            "option number one eta", "option number one theta"])})
    # --- empty questions, min_confidence, option_order, per-call budgets
    add("empty_questions", "predict", state=state_en, questions={})
    add("min_confidence_number", "predict", state=state_en, min_confidence=0.6,
        questions={"d": q_choice("Department?", DEPT), "r": q_noul("Refund?"), "u": q_score("Urgency?", URGENCY)})
    add("min_confidence_zero", "predict", state=state_en, min_confidence=0.0,
        questions={"d": q_choice("Department?", DEPT), "r": q_noul("Refund?")})
    add("min_confidence_one", "predict", state=state_en, min_confidence=1.0,
        questions={"d": q_choice("Department?", DEPT), "s": q_choice("Solo?", ["only"])})
    add("min_confidence_bucket_map", "predict", state=state_en,
        min_confidence={"choice:3-5": 0.95, "noul:2": 0.2, "default": 0.5},
        questions={"d": q_choice("Department?", ["billing", "support", "sales"]), "r": q_noul("Refund?"),
                   "u": q_score("Urgency?", URGENCY), "c2": q_choice("Two?", ["a", "b"])})
    add("min_confidence_map_without_default", "predict", state=state_en, min_confidence={"choice:6-10": 0.99},
        questions={"d": q_choice("Department?", DEPT), "e": q_choice("Topic?", WORDS.split()[:7])})
    add("option_order_permutation", "predict", state=state_en,
        questions={"d": q_choice("Department?", DEPT, option_order=[4, 2, 0, 1, 3]),
                   "u": q_score("Urgency?", URGENCY[:3], option_order=[2, 0, 1]),
                   "r": q_noul("Refund?", option_order=[1, 0])})
    add("per_call_small_budgets", "predict", state=long_text(10, WORDS), max_len=40, head_max_len=20,
        questions={"d": q_choice("Which department should handle this request today?", ["billing", "support"])})
    add("per_call_large_budgets", "predict", state=long_text(10, WORDS), max_len=512, head_max_len=256,
        questions={"d": q_choice("Department?", DEPT), "r": q_noul("Refund?")})
    add("unicode_question_ids", "predict", state=state_en,
        questions={"größe": q_noul("Is it big?"), "名前": q_choice("Name?", ["a", "b"]), "a b": q_noul("Spaced id?")})
    add("instructions_bool", "predict", state=state_en, questions={"r": q_noul(True)})
    # --- batches
    add("batch_three_states", "predict_batch",
        states=[state_en, {"order": 7, "total": 149.0}, conv[:3]],
        questions={"r": q_noul("Refund?"), "d": q_choice("Department?", DEPT)})
    add("batch_size_two", "predict_batch", batch_size=2,
        states=["short", long_text(40, WORDS), "médium état", {"k": [1, 2]}, ["a", "b"]],
        questions={"u": q_score("Urgency?", URGENCY[:3])})
    add("batch_min_confidence", "predict_batch", min_confidence=0.7, states=["yes please", "no thanks"],
        questions={"r": q_noul("Agrees?")})
    add("batch_empty_states", "predict_batch", states=[], questions={"r": q_noul("Refund?")})
    add("batch_empty_questions", "predict_batch", states=["a", "b"], questions={})
    # --- shortlist
    many = {"label %02d %s" % (i, w): ("about %s" % w if i % 3 else "") for i, w in enumerate(WORDS.split()[:40])}
    add("shortlist_forty_options_k5", "predict_shortlist", state=state_en, k=5,
        questions={"topic": q_choice("Which topic fits?", many), "r": q_noul("Refund?")})
    cases[-1]["embedding_vectors"] = True   # the mean-pooled vectors are recorded for this case only
    add("shortlist_default_k", "predict_shortlist", state={"ticket": state_en, "tags": ["money"]},
        questions={"topic": q_choice("Which topic fits?", list(many)[:25])})
    add("shortlist_passthrough", "predict_shortlist", state=state_en, k=20,
        questions={"d": q_choice("Department?", DEPT, option_order=[1, 0, 2, 3, 4])})
    # --- schema decisions
    schema = {"type": "object", "properties": {
        "department": {"enum": ["billing", "support", "sales"], "description": "Which team handles it?"},
        "urgency": {"type": "integer", "minimum": 1, "maximum": 4},
        "needs_human": {"type": "boolean", "description": "Does a person need to step in?"},
        "tier": {"$ref": "#/$defs/Tier", "description": "Customer tier?"},
        "region": {"anyOf": [{"enum": ["eu", "us"]}, {"type": "null"}]},
        "fixed": {"const": "yes"}},
        "$defs": {"Tier": {"enum": ["free", "pro", 3], "description": "ignored docstring"}}}
    add("decide_schema_details", "decide", state=state_en, schema=schema, return_details=True)
    add("decide_schema_values", "decide", state=state_en, schema=schema)
    add("decide_schema_min_confidence", "decide", state=state_en, schema=schema, min_confidence=0.8,
        return_details=True)
    add("decide_questions", "decide", state=state_en, questions={"r": q_noul("Refund?")})
    add("decide_batch_schema", "decide_batch", states=[state_en, "nothing to see"], schema=schema)
    # --- errors the SDK raises
    err = [
        ("error_unknown_type", {"q": {"type": "multi", "instructions": "x", "criteria": ["a"]}}),
        ("error_missing_instructions", {"q": {"type": "noul"}}),
        ("error_blank_instructions", {"q": {"type": "noul", "instructions": "   "}}),
        ("error_null_instructions", {"q": {"type": "noul", "instructions": None}}),
        ("error_empty_list_instructions", {"q": {"type": "noul", "instructions": []}}),
        ("error_empty_question_id", {"": q_noul("x")}),
        ("error_choice_criteria_string", {"q": q_choice("x", "billing")}),
        ("error_choice_empty_criteria", {"q": q_choice("x", {})}),
        ("error_choice_null_label", {"q": q_choice("x", ["a", None])}),
        ("error_choice_list_label", {"q": q_choice("x", ["a", ["b"]])}),
        ("error_choice_duplicate_labels", {"q": q_choice("x", [1, "a", 1.0])}),
        ("error_score_dict_criteria", {"q": q_score("x", {"a": 1})}),
        ("error_score_empty", {"q": q_score("x", [])}),
        ("error_score_null_level", {"q": q_score("x", ["a", None])}),
        ("error_noul_bad_criteria_keys", {"q": q_noul("x", {"yes": "a"})}),
        ("error_noul_criteria_list", {"q": q_noul("x", ["a"])}),
        ("error_noul_same_labels", {"q": q_noul("x", labels={"false": "x", "true": " x "})}),
        ("error_labels_on_choice", {"q": q_choice("x", ["a", "b"], labels={"false": "n", "true": "y"})}),
        ("error_option_order_not_permutation", {"q": q_choice("x", ["a", "b", "c"], option_order=[0, 0, 1])}),
        ("error_option_order_wrong_length", {"q": q_noul("x", option_order=[0])}),
        ("error_definition_not_dict", {"q": "noul"}),
        ("error_blank_question_id", {" ": q_noul("x")}),
    ]
    for name, qs in err:
        add(name, "predict", state=state_en, questions=qs)
    add("error_markers_do_not_fit", "predict", state=state_en, max_len=30,
        questions={"d": q_choice("Department?", DEPT)})
    add("error_min_confidence_out_of_range", "predict", state=state_en, min_confidence=1.5,
        questions={"r": q_noul("x")})
    add("error_min_confidence_bool", "predict", state=state_en, min_confidence=True, questions={"r": q_noul("x")})
    add("error_min_confidence_bad_bucket", "predict", state=state_en, min_confidence={"choice:7": 0.5},
        questions={"r": q_noul("x")})
    add("error_min_confidence_empty_map", "predict", state=state_en, min_confidence={}, questions={"r": q_noul("x")})
    add("error_state_null", "predict", state=None, questions={"r": q_noul("x")})
    add("error_batch_given_string", "predict_batch", states="not a list", questions={"r": q_noul("x")})
    add("error_questions_not_dict", "predict_batch", states=["a"], questions=[q_noul("x")])
    add("error_batch_state_null", "predict_batch", states=["a", None], questions={"r": q_noul("x")})
    add("error_shortlist_k_zero", "predict_shortlist", state=state_en, k=0,
        questions={"d": q_choice("x", ["a", "b"])})
    add("error_schema_free_string", "decide", state=state_en,
        schema={"type": "object", "properties": {"name": {"type": "string"}}})
    add("error_schema_array", "decide", state=state_en,
        schema={"type": "object", "properties": {"tags": {"type": "array"}}})
    add("error_schema_nested_object", "decide", state=state_en,
        schema={"type": "object", "properties": {"o": {"type": "object"}}})
    add("error_schema_too_many_options", "decide", state=state_en,
        schema={"type": "object", "properties": {"e": {"enum": ["v%d" % i for i in range(33)]}}})
    add("error_schema_range_too_wide", "decide", state=state_en,
        schema={"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}})
    add("error_schema_and_questions", "decide", state=state_en,
        schema={"type": "object", "properties": {"b": {"type": "boolean"}}}, questions={"r": q_noul("x")})
    # --- laya.serve request limits (HTTP status + detail), checked before any tokenization
    add("serve_ok", "serve_check_request_limits", state=state_en, questions={"r": q_noul("x")})
    add("serve_state_required", "serve_check_request_limits", state=None, questions={"r": q_noul("x")})
    add("serve_questions_not_object", "serve_check_request_limits", state="a", questions=["x"])
    add("serve_too_many_questions", "serve_check_request_limits", state="a",
        questions={"q%02d" % i: q_noul("x") for i in range(65)})
    add("serve_too_many_choice_options", "serve_check_request_limits", state="a",
        questions={"c": q_choice("x", ["o%d" % i for i in range(101)])})
    add("serve_too_many_score_levels", "serve_check_request_limits", state="a",
        questions={"s": q_score("x", ["l%d" % i for i in range(33)])})
    add("serve_score_null_level", "serve_check_request_limits", state="a", questions={"s": q_score("x", ["a", None])})
    add("serve_too_many_total_options", "serve_check_request_limits", state="a",
        questions={"c%d" % j: q_choice("x", ["o%d" % i for i in range(100)]) for j in range(6)})
    add("serve_state_too_large", "serve_check_request_limits", expand={"state": ["ab", 25001]},
        questions={"r": q_noul("x")})
    add("serve_json_state_too_large", "serve_check_request_limits", expand={"state.body": ["\"", 25001]},
        state={"body": None}, questions={"r": q_noul("x")})
    add("serve_state_at_limit", "serve_check_request_limits", expand={"state": ["x", 50000]},
        questions={"r": q_noul("x")})
    add("serve_batch_empty", "serve_check_batch_limits", states=[], questions={"r": q_noul("x")})
    add("serve_batch_too_many_states", "serve_check_batch_limits", states=["s"] * 65, questions={"r": q_noul("x")})

    if set_name == "real":
        keep = {"choice_basic", "choice_single_option", "choice_two_options", "choice_eleven_options",
                "choice_thirty_options_default_budget", "score_five_levels", "noul_default",
                "noul_custom_criteria_and_labels", "mixed_types_one_request", "long_string_state_keeps_head",
                "long_list_state_keeps_tail", "json_state_floats", "json_state_non_ascii", "mask_text_in_user_input",
                "special_token_text_in_user_input", "cjk_state_and_question", "arabic_state", "hindi_state",
                "emoji_and_whitespace", "options_collapse_to_same_span", "min_confidence_bucket_map",
                "option_order_permutation", "batch_three_states", "batch_size_two", "shortlist_forty_options_k5",
                "decide_schema_details"}
        cases = [c for c in cases if c["name"] in keep]
        # Long enough to be cut at the real max_len (512 / 1024) too.
        for c in cases:
            if c["name"] == "long_string_state_keeps_head":
                c["args"]["state"] = long_text(400, WORDS)
            if c["name"] == "long_list_state_keeps_tail":
                c["args"]["state"] = [{"role": "user", "content": long_text(12, WORDS + " turn %d" % i)}
                                      for i in range(40)]
    return cases


def expand_args(args):
    """Apply `expand` (only used by the serve size checks): "a.b": [text, n] sets args[a][b] = text * n."""
    args = copy.deepcopy(args)
    for path, (text, n) in args.pop("expand", {}).items():
        parts = path.split(".")
        target = args
        for p in parts[:-1]:
            target = target[p]
        target[parts[-1]] = text * n
    return args


# --------------------------------------------------------------------------------------- recorder


class Recorder:
    """Wraps upstream's `build_sequence`, `Agent._infer` and the shortlist embedder for one case."""

    def __init__(self, agent, fp64=True):
        import laya.agent
        self.agent = agent
        self.fp64 = fp64
        self.mod = laya.agent
        self.orig_build = laya.agent.build_sequence
        self.orig_infer = agent._infer
        self.reset()

    def model64(self):
        if getattr(self, "_m64", None) is None:
            import copy as _copy
            self._m64 = _copy.deepcopy(self.agent.model).double().eval()
        return self._m64

    def reset(self, keep_vectors=False):
        self.keep_vectors = keep_vectors
        self.rows, self.forwards, self.embeddings = [], [], []
        self.n_checked = 0

    def __enter__(self):
        rec = self

        def build_sequence(tok, state, q, *a, **kw):
            out = rec.orig_build(tok, state, q, *a, **kw)
            seq, markers = out[0], out[1]
            row = {"qtype": {"choice": 0, "score": 1, "noul": 2}[q["t"]], "input_ids": list(seq),
                   "markers": list(markers)}
            if kw.get("return_stats"):
                row["option_stats"] = out[2]
                if kw.get("return_truncation_stats"):
                    row["state_stats"] = out[3]
            rec.rows.append(row)
            return out

        def infer(b):
            import torch
            logits, act = rec.orig_infer(b)
            rec.check_batch(b)
            n = int(b["input_ids"].shape[0])
            # The same batch through a float64 copy of the model: the exact-arithmetic reference a
            # port can measure its own fp32 error against (torch's fp32 differs from it too).
            l64 = a64 = None
            if rec.fp64:
                with torch.no_grad():
                    l64, a64 = rec.model64()(b["input_ids"], b["attention_mask"], b["marker_pos"],
                                             b["marker_mask"], b["qtype"])
            fw = {
                "rows": n,
                "seq_len": int(b["input_ids"].shape[1]),
                "marker_width": int(b["marker_pos"].shape[1]),
                "qtype": [int(x) for x in b["qtype"]],
                "logits": [[f32(v) for v in r] for r in logits.float()],
                "act_logits": [[f32(v) for v in r] for r in act.float()],
            }
            if l64 is not None:
                fw["logits_fp64"] = [[float(v) for v in r] for r in l64]
                fw["act_logits_fp64"] = [[float(v) for v in r] for r in a64]
            rec.forwards.append(fw)
            return logits, act

        self.mod.build_sequence = build_sequence
        self.agent._infer = infer
        return self

    def __exit__(self, *exc):
        self.mod.build_sequence = self.orig_build
        self.agent._infer = self.orig_infer
        return False

    def check_batch(self, b):
        """The batch must be the next recorded rows, padded with the pad id (a documented promise)."""
        pad = self.agent.tok.pad_token_id
        n = int(b["input_ids"].shape[0])
        rows = self.rows[self.n_checked:self.n_checked + n]
        if len(rows) != n:
            raise AssertionError("forward pass has %d rows but only %d recorded sequences are pending" % (n, len(rows)))
        L = int(b["input_ids"].shape[1])
        K = int(b["marker_pos"].shape[1])
        assert L == max(len(r["input_ids"]) for r in rows)
        assert K == max(len(r["markers"]) for r in rows)
        for i, r in enumerate(rows):
            ids = r["input_ids"]
            want = ids + [pad] * (L - len(ids))
            assert b["input_ids"][i].tolist() == want, "row %d ids differ from build_sequence" % i
            assert b["attention_mask"][i].tolist() == [1] * len(ids) + [0] * (L - len(ids))
            k = len(r["markers"])
            assert b["marker_pos"][i].tolist() == r["markers"] + [0] * (K - k)
            assert b["marker_mask"][i].tolist() == [True] * k + [False] * (K - k)
            assert int(b["qtype"][i]) == r["qtype"]
        self.n_checked += n

    def embed_fn(self):
        from laya.shortlist import embed_fn_from_agent
        from laya.common import encode_text
        inner = embed_fn_from_agent(self.agent)
        rec = self

        def fn(texts):
            out = inner(texts)
            for t, v in zip(texts, out):
                ids = encode_text(rec.agent.tok, t, truncation=True, max_length=512)["input_ids"]
                item = {"text": t, "input_ids": list(ids)}
                if rec.keep_vectors:
                    item["embedding"] = [f32(x) for x in v]
                rec.embeddings.append(item)
            return out

        return fn


# ------------------------------------------------------------------------------------------ runner


def jsonable(x):
    """The SDK's return value as JSON (a DecisionResult becomes its dataclass fields)."""
    if dataclasses.is_dataclass(x):
        return {k: jsonable(v) for k, v in dataclasses.asdict(x).items()}
    if isinstance(x, dict):
        return {("null" if k is None else k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError("unexpected %s in an SDK result" % type(x).__name__)


def run_case(agent, rec, case):
    import laya.serve
    from laya.shortlist import predict_shortlist
    try:
        from fastapi import HTTPException
    except ImportError:  # only laya.serve's checks raise it (the serve_* cases; not in --set real)
        class HTTPException(Exception):
            pass

    args = expand_args(case["args"])
    call = case["call"]
    rec.reset(keep_vectors=case.get("embedding_vectors", False))
    out = {}
    try:
        with rec, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if call == "predict":
                kw = {k: v for k, v in args.items() if k not in ("state", "questions")}
                res = agent.predict(args["state"], args["questions"], **kw)
            elif call == "predict_batch":
                kw = {k: v for k, v in args.items() if k not in ("states", "questions")}
                res = agent.predict_batch(args["states"], args["questions"], **kw)
            elif call == "predict_shortlist":
                kw = {k: v for k, v in args.items() if k not in ("state", "questions")}
                res = predict_shortlist(agent, args["state"], args["questions"], rec.embed_fn(), **kw)
            elif call == "decide":
                kw = {k: v for k, v in args.items() if k != "state"}
                res = agent.decide(args["state"], **kw)
            elif call == "decide_batch":
                kw = {k: v for k, v in args.items() if k != "states"}
                res = agent.decide_batch(args["states"], **kw)
            elif call == "serve_check_request_limits":
                laya.serve._check_request_limits(args["state"], args["questions"])
                res = None
            elif call == "serve_check_batch_limits":
                laya.serve._check_batch_limits(args["states"], args["questions"])
                res = None
            else:
                raise SystemExit("unknown call %r" % call)
        out["result"] = jsonable(res)
    except HTTPException as e:
        out["error"] = {"class": "HTTPException", "status": e.status_code, "message": e.detail}
    except (ValueError, TypeError, KeyError) as e:
        out["error"] = {"class": type(e).__name__, "message": str(e)}
        caught = []
    warn = sorted({str(w.message) for w in caught}) if "result" in out else []
    if rec.n_checked != len(rec.rows) and "error" not in out:
        raise AssertionError("%s: %d sequences built but %d reached a forward pass"
                             % (case["name"], len(rec.rows), rec.n_checked))
    rec_out = {"name": case["name"], "call": call, "args": case["args"]}
    if "planned_questions" in case:
        rec_out["planned_questions"] = case["planned_questions"]
    if call in ("decide", "decide_batch") and "schema" in args:
        from laya.structured import questions_from_json_schema, SchemaError
        try:
            rec_out["planned_questions"] = questions_from_json_schema(args["schema"])
        except SchemaError:
            pass
    rec_out["rows"] = rec.rows
    rec_out["forwards"] = rec.forwards
    if rec.embeddings:
        rec_out["embeddings"] = rec.embeddings
    if warn:
        rec_out["warnings"] = warn
    rec_out.update(out)
    return rec_out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="a laya checkpoint directory")
    ap.add_argument("--out", help="where to write (default: <checkpoint>/cases.json)")
    ap.add_argument("--set", default="full", choices=["full", "real"],
                    help="full: every case (tiny fixtures); real: the subset for real-size checkpoints")
    ap.add_argument("--fp64", choices=["on", "off"],
                    help="also run each batch through a float64 copy (default: on for full, off for real)")
    args = ap.parse_args()

    import torch
    import laya
    from laya.common import QTYPES

    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    with warnings.catch_warnings(record=True) as load_warnings:
        warnings.simplefilter("always")
        agent = laya.load(args.checkpoint, device="cpu")
    tok = agent.tok
    cases = build_cases(tok.mask_token, args.set)
    rec = Recorder(agent, fp64=(args.fp64 or ("on" if args.set == "full" else "off")) == "on")
    recorded = []
    for case in cases:
        recorded.append(run_case(agent, rec, case))
        r = recorded[-1]
        print("%-44s %s" % (case["name"], ("error " + r["error"]["class"]) if "error" in r else
                            "%d rows, %d forwards" % (len(r["rows"]), len(r["forwards"]))), file=sys.stderr)
    cfg = agent.cfg
    doc = {
        "format": FORMAT,
        "generator": "tools/reference/run_laya_cases.py --set %s" % args.set,
        "versions": reftools.versions(),
        "checkpoint": {
            "model_safetensors_sha256": sha256(os.path.join(args.checkpoint, "model.safetensors")),
            "tokenizer_json_sha256": sha256(os.path.join(args.checkpoint, "tokenizer", "tokenizer.json")),
        },
        "config": {
            "max_len": cfg.get("max_len", 512),
            "head_max_len": cfg.get("head_max_len", 192),
            "temperature_raw": cfg.get("temperature", [1.0, 1.0, 1.0]),
            "temperature_by_options_raw": cfg.get("temperature_by_options", {}),
            "temperature": agent.temperature,
            "temperature_by_options": agent.temperature_by_options,
            "load_warnings": sorted({str(w.message) for w in load_warnings}),
        },
        "qtypes": QTYPES,
        "special_tokens": {
            "cls_id": tok.cls_token_id, "sep_id": tok.sep_token_id, "pad_id": tok.pad_token_id,
            "mask_id": tok.mask_token_id, "unk_id": tok.unk_token_id, "cls_token": tok.cls_token,
            "sep_token": tok.sep_token, "pad_token": tok.pad_token, "mask_token": tok.mask_token,
            "unk_token": tok.unk_token,
        },
        "cases": recorded,
    }
    out = args.out or os.path.join(args.checkpoint, "cases.json")
    reftools.dump_json(doc, out)
    print("%s: %d cases" % (out, len(recorded)), file=sys.stderr)


if __name__ == "__main__":
    main()
