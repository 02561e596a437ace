#!/usr/bin/env python3
"""Record the upstream router's answers: tests/fixtures/laya-router/analyse_probe.json.

    /work/refvenv/bin/python tools/reference/make_router_probe.py tests/fixtures/laya-router/analyse_probe.json

`laya.lang.analyse(state, explain=True)` and `laya.router.Router(...).route(...)` of the installed
upstream SDK (laya 0.4.15) over states made to reach every branch of the detector: each language's
stopwords, short Swedish, shouted and emphasis capitals, acronyms, identifiers, code lines, mixed
scripts, names, IPA, combining marks, Turkish dotted I, final sigma, numerals, letters newer than
old Unicode databases, multi-line and multi-field states, deep nesting, long texts, and a seeded
random mix of all of these. The C++ router must reproduce every result (tests/runtime/test_router.cpp).
Deterministic: same package version, same bytes.
"""
import json
import random
import sys

import laya
import laya.lang as L
from laya.router import Router

FIXED = [
    "", " ", "12345", "!!!", "refund me", "Please refund the duplicate charge on invoice 4411 today.",
    "Why hasn't my card been delivered?", "Do more, do less, do it now please",
    "Le client a ete facture deux fois et demande un remboursement",
    "Der Kunde wurde zweimal belastet und moechte eine Rueckerstattung",
    "El pedido llego roto y nadie responde cuando escribo al soporte",
    "O cliente foi cobrado duas vezes e quer o dinheiro de volta",
    "Voce pode me mandar a nota fiscal?", "Deu erro 500 no endpoint de login depois do update",
    "Il cliente e stato addebitato due volte e vuole un rimborso", "la fattura è sbagliata",
    "De klant wil zijn geld terug omdat de factuur twee keer is betaald",
    "Jag behöver hjälp med min faktura", "kan inte logga in", "glömt lösenord", "losenord fel",
    "Clientul vrea banii înapoi pentru că factura a fost plătită de două ori",
    "Cât e ora acum la Tokyo", "ami tomake kal theke khub kharap lagche, taka ferot chai",
    "Mən bu sifarişi ləğv etmək istəyirəm, çox gecikdi",
    "Müşteriden iki kez ücret alındı ve para iadesi istiyor",
    "Klient został obciążony dwukrotnie i chce zwrot pieniędzy za fakturę",
    "MON DES EST LA", "STORES LOS ANGELES LAS VEGAS EL PASO CLOSED",
    "WIE SPÄT IST ES IN KÖLN", "WIE SPAET IST ES IN KOELN", "QUIERO CANCELAR MI PEDIDO POR FAVOR",
    "quiero cancelar mi PEDIDO POR FAVOR", "sag mir das HEUTIGE DATUM bitte jetzt",
    "Hockey tonight: MON DES EST LA and then the late game", "ПРИВЕТ MON DES EST LA",
    "Visit github.com or write to user@acme.com about v1.2.3 of the U.S.A. build",
    "com o e com o e github.com e.com x.o", "os.path.join(el, non_english) = round(el, 2)",
    "Set α to 0.05 and β to 0.1 before the run",
    "Dmitri wrote: Дмитрий Петрович Савицкий signed the contract",
    "The name is pronounced [vlɐˈdʲimʲɪr] in Russian", "Влади́мир приехал вчера вечером",
    "İSTANBUL'DA HAVA NASIL", "İstanbul'da hava nasıl bugün", "ΣΟΦΙΑ ΚΑΙ ΝΟΥΣ", "σοφία καὶ νοῦς",
    "ＡＢＣ ｄｅｆ full width letters here", "Ⅳ ² ½ ௰ numerals and words here", "café résumé naïve José",
    "I love the café near the résumé office", "𐕰𐕱𐕲 Vithkuqi letters", "\u1c89\u1c8a new letters",
    "🙂🙃 emoji only", "二重に請求されました", "두 번 청구되었습니다", "تم خصم المبلغ مرتين",
    "मुझसे दो बार शुल्क लिया गया", "Հայերեն abc", "Order ABC-123 from 株式会社 arrived late",
    "The order from 株式会社東京 arrived broken and we want money back now",
    "line one in English\nLe client a ete facture deux fois et demande un remboursement",
    "Thanks!\n\nO cliente foi cobrado duas vezes e quer o dinheiro de volta\n-- \nSent from phone",
    "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    os.path.join(a, b)",
    "Nav/Com OS/2 C:\\DOS\\mode ESA/UN are names", "COM COM COM le la les",
    "hej ja nej tack mig min", "hej hur mår du idag", "tack för hjälpen med fakturan",
]

STRUCTURED = [
    {"body": "I was charged twice, please refund."},
    {"note": "Customer called about the invoice and the account, we checked everything in the system "
             "and found the duplicate charge from last week which we will refund.",
     "message": "Ich möchte mein Geld zurück, bitte"},
    {"subject": "Refund", "body": "Der Kunde wurde zweimal belastet und möchte eine Rückerstattung"},
    {"a": {"b": {"c": {"d": {"e": {"f": {"g": "Der Kunde wurde zweimal belastet"}}}}}}},
    {"a": {"b": {"c": {"d": {"e": {"f": "Der Kunde wurde zweimal belastet und möchte"}}}}}},
    [{"role": "user", "content": "My login fails after the update."},
     {"role": "assistant", "content": "Did you try resetting the password?"},
     {"role": "user", "content": "Sim, ainda não funciona depois do update"}],
    {"x" * 200: "O cliente foi cobrado duas vezes e quer o dinheiro de volta", "ok": "fine thanks"},
    {"order": 1234, "status": "late", "items": ["lamp", "chair"], "total": 149.0, "paid": False},
    {"items": [1, 2, 3], "flag": True, "none": None},
    {"ticket": "English text here about a refund", "fields": ["Привет, как дела у тебя сегодня", "ok"]},
    {"t": "The quick brown fox jumps over the lazy dog. " * 120, "m": "Le client a ete facture deux fois"},
    {"long": "word " * 900 + "\nLe client a ete facture deux fois et demande un remboursement"},
    ["English line", "another English line", "Клиент хочет вернуть деньги, потому что счёт оплачен"],
    {"a": "café", "b": "crème brûlée à la carte tout de suite"},
    {"code": "x = {'le': 1, 'la': 2}; y = [3]", "msg": "please check the code above"},
    {"name": "José García", "msg": "Please refund my order, it arrived broken"},
    {"msg": "WIE SPÄT IST ES IN KÖLN", "note": "customer asked about the time"},
    {"msg": "ΠΡΟΣΟΧΗ ΣΤΟ ΣΥΣΤΗΜΑ", "note": "please check"},
    {"note": "The customer called twice about the invoice and we checked the account, the payment and "
             "the refund history in the billing system before answering them. " * 3, "msg": "привет как дела у тебя"},
    42, 3.5, True, None, [], {}, ["", ""], {"k": ""},
]


def random_states(n, seed):
    rng = random.Random(seed)
    pools = [sorted(words) for words in L._STOP.values()]
    extra = ["café", "ÇA", "Straße", "ÜBER", "naïve", "ŞEHİR", "İ", "ő", "ə", "đ", "ß", "github.com",
             "a@b.io", "x=1", "f(x)", "MON", "DES", "EST", "LA", "PEDIDO", "HEUTIGE", "Дмитрий", "привет",
             "株式会社", "नमस्ते", "안녕", "α", "Σ", "ΣΟΦΟΣ", "12", "3.5", "—", "…", "\u0301", "\u200b"]
    out = []
    for _ in range(n):
        k = rng.randint(1, 16)
        words = []
        for _ in range(k):
            r = rng.random()
            if r < 0.7:
                w = rng.choice(rng.choice(pools))
                if rng.random() < 0.15:
                    w = w.upper()
                elif rng.random() < 0.1:
                    w = w.capitalize()
            else:
                w = rng.choice(extra)
            words.append(w)
        sep = rng.choice([" ", " ", " ", "\n", ", ", ". "])
        text = sep.join(words)
        shape = rng.random()
        if shape < 0.6:
            out.append(text)
        elif shape < 0.8:
            half = len(words) // 2
            out.append({"a": " ".join(words[:half]), "b": " ".join(words[half:])})
        else:
            out.append([text, rng.choice(FIXED)])
    return out


ROUTES = [
    ({}, {"state": "hello there my friend", "lang": "C.UTF-8"}),
    ({}, {"state": "hello there my friend", "lang": "en_US.UTF-8"}),
    ({}, {"state": "hello there my friend", "lang": " EN "}),
    ({}, {"state": "hello there my friend", "lang": ""}),
    ({}, {"state": "hello there my friend", "lang": "und"}),
    ({}, {"state": "hello there my friend", "lang": "pt-BR"}),
    ({}, {"state": "hello there my friend", "lang": "POSIX"}),
    ({}, {"state": "मुझसे दो बार", "lang_guess": "en"}),
    ({}, {"state": "the customer wants a refund", "lang_guess": "de"}),
    ({}, {"state": "the customer wants a refund", "lang_guess": "zxx"}),
    ({"lang_guess": "fr"}, {"state": "the customer wants a refund"}),
    ({"lang_guess": "fr"}, {"state": "the customer wants a refund", "lang_guess": "en"}),
    ({"lang_guess": "mul"}, {"state": "the customer wants a refund for the invoice"}),
    ({"default": "english"}, {"state": "Quero cancelar"}),
    ({"default": "ml"}, {"state": "12345"}),
    ({}, {"state": "x", "task": "multilingual"}),
    ({}, {"state": "x", "task": "TYPED-DECISIONS"}),
    ({}, {"state": "x", "model": " Typed "}),
    ({"models": {"papers": "/tmp/papers"}}, {"state": "x", "model": "papers"}),
    ({"standalone_repos": True}, {"state": "x", "model": "multilingual"}),
    ({"auto_task_detection": True},
     {"state": "x", "questions": {"urgency": {}, "action": {}, "needs_review": {}, "outcome": {}, "risk": {}},
      "lang": "de"}),
    ({}, {"state": "x", "questions": {"urgency": {}, "action": {}, "needs_review": {}, "outcome": {}, "risk": {}},
          "lang": "de"}),
    ({}, {"state": "Le client a ete facture deux fois", "explain": True}),
    ({}, {"state": {"note": "Customer called about the invoice and the account, we checked everything",
                    "msg": "Der Kunde wurde zweimal belastet und möchte"}, "explain": True}),
    ({}, {"state": "line one in English\nLe client a ete facture deux fois et demande un remboursement",
          "explain": True}),
    ({}, {"state": {"a": "english words here and there", "b": "Dmitri: Клиент хочет вернуть деньги"},
          "explain": True}),
]


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_router_probe.py OUT.json")
    states = FIXED + STRUCTURED + random_states(400, 20240611)
    analyse = [{"state": s, "result": L.analyse(s, explain=True)} for s in states]
    routes = []
    for router_kwargs, route_kwargs in ROUTES:
        decision = Router(**router_kwargs).route(**route_kwargs)
        routes.append({"router_kwargs": router_kwargs, "route_kwargs": route_kwargs,
                       "decision": {k: decision[k] for k in ("model", "reason", "detection", "workflow")}})
    doc = {"generator": "tools/reference/make_router_probe.py", "laya_version": laya.__version__,
           "python": sys.version.split()[0], "analyse": analyse, "route": routes}
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
