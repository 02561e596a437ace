#!/usr/bin/env python3
"""A labelled decision set for `laya-run calibrate` (docs/generation.md "Temperatures"): states of
the three example scenarios (smart-home hub, industrial alarm, edge quality inspection) drawn at
random, each with questions whose right answer follows from the state by a stated rule, so the
labels are unambiguous.

  examples/calibration/make_set.py > examples/calibration/decoder-labelled.jsonl

One line per state: {"system", "state", "questions", "labels"} (a decoder questions request plus
the answers). 90 lines (30 per scenario), 390 questions: noul (2 options), choice (2 and 3
options), score (4 levels). Standard library only; deterministic (random.Random(8)): reruns write
the same bytes.
"""
import json
import random

HOME_SYSTEM = ("You are the decision engine of a smart-home hub. You read the live device state "
               "and answer questions about it.")
PLANT_SYSTEM = ("You supervise a pumping station. You read the sensor state and answer questions "
                "about it.")
QA_SYSTEM = ("You are the quality gate of a production line. You read one part's inspection "
             "measurements and answer questions about it.")
ROOMS = ["living_room", "bedroom", "kitchen"]
PUMPS = ["pump_1", "pump_2", "pump_3"]


def home(rng):
    indoor = round(rng.uniform(15.0, 27.0), 1)
    target = float(rng.choice([19, 20, 21, 22]))
    outdoor = round(rng.uniform(-5.0, 30.0), 1)
    while abs(outdoor - indoor) < 2.0:
        outdoor = round(rng.uniform(-5.0, 30.0), 1)
    occupied = {r: rng.random() < 0.5 for r in ROOMS}
    windows = [r for r in ROOMS if rng.random() < 0.3]
    state = {
        "time": "%02d:%02d" % (rng.randrange(24), rng.randrange(60)),
        "occupancy": occupied,
        "indoor_temp_c": indoor,
        "outdoor_temp_c": outdoor,
        "target_temp_c": target,
        "windows_open": windows,
        "smoke_detected": rng.random() < 0.3,
    }
    if abs(indoor - target) <= 0.5:
        vs = "at"
    else:
        vs = "below" if indoor < target else "above"
    questions = {
        "smoke": {"type": "noul", "instructions": "Does the state report smoke?"},
        "window": {"type": "noul", "instructions": "Is at least one window open?"},
        "temp_vs_target": {
            "type": "choice",
            "instructions": "How does the indoor temperature compare with the target temperature?",
            "criteria": {"below": "more than 0.5 C below the target",
                         "at": "within 0.5 C of the target",
                         "above": "more than 0.5 C above the target"}},
        "warmer": {"type": "choice", "instructions": "Where is it warmer?",
                   "criteria": {"inside": "indoors", "outside": "outdoors"}},
        "occupied_rooms": {"type": "score", "instructions": "How many rooms are occupied?",
                           "criteria": ["none", "one room", "two rooms", "three rooms"]},
    }
    labels = {
        "smoke": state["smoke_detected"],
        "window": bool(windows),
        "temp_vs_target": vs,
        "warmer": "inside" if indoor > outdoor else "outside",
        "occupied_rooms": sum(occupied.values()),
    }
    return HOME_SYSTEM, state, questions, labels


def plant(rng):
    hot = rng.choice(PUMPS)
    over = rng.random() < 0.5
    limit = 90.0
    temp = round(rng.uniform(91.0, 110.0) if over else rng.uniform(60.0, 88.0), 1)
    level = rng.randrange(0, 101)
    state = {
        "station": "PS-%d" % rng.randrange(1, 20),
        "alarms": [{"sensor": hot + "_bearing_temp", "value": temp, "limit": limit, "unit": "C"}],
        "pumps": {p: rng.choice(["running", "standby"]) for p in PUMPS},
        "tank_level_pct": level,
        "operator_on_site": rng.random() < 0.5,
    }
    questions = {
        "over_limit": {"type": "noul", "instructions": "Is the alarm value above its limit?"},
        "alarm_pump": {"type": "choice", "instructions": "Which pump does the alarm come from?",
                       "criteria": PUMPS},
        "tank": {"type": "score", "instructions": "How full is the tank?",
                 "criteria": ["0-24 percent", "25-49 percent", "50-74 percent", "75-100 percent"]},
        "operator": {"type": "noul", "instructions": "Is an operator on site?"},
    }
    labels = {"over_limit": over, "alarm_pump": hot, "tank": min(3, level // 25),
              "operator": state["operator_on_site"]}
    return PLANT_SYSTEM, state, questions, labels


def quality(rng):
    tol = 0.05
    nominal = 42.0
    inside = rng.random() < 0.5
    dev = rng.uniform(0.0, 0.04) if inside else rng.uniform(0.07, 0.2)
    diameter = round(nominal + rng.choice([-1, 1]) * dev, 3)
    scratches = rng.choice([0, 0, 1, 2, 3, 4])
    weight_nominal = 310.0
    weight = round(weight_nominal + rng.choice([rng.uniform(-0.8, 0.8), rng.uniform(2.0, 6.0)]), 1)
    state = {
        "line": "L%d" % rng.randrange(1, 5),
        "part_id": "BRK-%05d" % rng.randrange(100000),
        "camera": {"scratch_count": scratches},
        "caliper": {"diameter_mm": diameter, "nominal_mm": nominal, "tolerance_mm": tol},
        "weight_g": weight,
        "weight_nominal_g": weight_nominal,
    }
    if not inside:
        verdict = "scrap"
    elif scratches > 0:
        verdict = "rework"
    else:
        verdict = "ship"
    questions = {
        "verdict": {"type": "choice", "instructions": "What happens to the part?",
                    "criteria": {"ship": "diameter within tolerance and no scratches",
                                 "rework": "diameter within tolerance but scratched",
                                 "scrap": "diameter outside tolerance"}},
        "in_tolerance": {"type": "noul",
                         "instructions": "Is the diameter within tolerance of the nominal?"},
        "scratches": {"type": "score", "instructions": "How many scratches does the camera count?",
                      "criteria": ["none", "one", "two", "three or more"]},
        "weight_ok": {"type": "noul", "instructions": "Is the weight within 1 g of the nominal weight?"},
    }
    labels = {"verdict": verdict, "in_tolerance": inside, "scratches": min(3, scratches),
              "weight_ok": abs(weight - weight_nominal) <= 1.0}
    return QA_SYSTEM, state, questions, labels


def main():
    rng = random.Random(8)
    for i in range(90):
        system, state, questions, labels = (home, plant, quality)[i % 3](rng)
        print(json.dumps({"system": system, "state": state, "questions": questions,
                          "labels": labels}, ensure_ascii=False))


if __name__ == "__main__":
    main()
