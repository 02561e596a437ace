#!/usr/bin/env python3
"""Writes the seed corpus of the request fuzz target (tests/fuzz/seeds/request/): the /v1/systemone
bodies the upstream SDK answered or refused in the committed fixtures, one file per body.

  decisions-<case>.json   every request of tests/fixtures/laya-decisions/cases.json (run through
                          laya 0.4.15's server checks by run_laya_cases.py: results and errors,
                          schema, batch, shortlist, min_confidence, budgets, routing fields) whose
                          body is under 8 KB
  golden-<model>-<case>.json   {"state", "questions"} of the upstream golden cases
                          (tests/fixtures/laya-golden/{multilingual,typed-decisions}/case_*.json)
                          under 16 KB: Arabic, CJK, dict / list states, JSON escaping, mask
                          injection

    python3 tools/reference/make_fuzz_request_seeds.py tests/fuzz/seeds/request
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    written = 0
    cases = json.loads((FIXTURES / "laya-decisions" / "cases.json").read_text(encoding="utf-8"))
    for case in cases["cases"]:
        body = json.dumps(case["request"], ensure_ascii=False, indent=1).encode()
        if len(body) < 8 * 1024:
            (out / f"decisions-{case['name']}.json").write_bytes(body)
            written += 1
    for model in ("multilingual", "typed-decisions"):
        for path in sorted((FIXTURES / "laya-golden" / model).glob("case_*.json")):
            case = json.loads(path.read_text(encoding="utf-8"))
            body = {"state": case["state"], "questions": case["questions"]}
            text = json.dumps(body, ensure_ascii=False, indent=1).encode()
            if len(text) < 16 * 1024:
                (out / f"golden-{model}-{path.stem[5:]}.json").write_bytes(text)
                written += 1
    print(f"{out}: {written} request bodies")


if __name__ == "__main__":
    main(sys.argv[1])
