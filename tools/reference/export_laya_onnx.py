#!/usr/bin/env python3
"""Export a Laya checkpoint (encoder + decision head) to ONNX, plus an ONNX Runtime int8 version.

    export_laya_onnx.py --checkpoint DIR [--out-dir DIR/onnx] [--cases DIR/cases.json]

Writes `laya.onnx` (fp32, `torch.onnx.export`, legacy TorchScript exporter, opset 17) and
`laya.int8.onnx` (`onnxruntime.quantization.quantize_dynamic`, QInt8 weights, per-channel off,
MatMul/Gemm/Attention ops, activations quantized per batch at run time as ORT does). The graph has
upstream's ONNX interface, the one `laya.load(dir, backend="onnx", onnx_path=...)` (ONNXAgent) runs:

    inputs  input_ids int64 [batch, seq], attention_mask int64 [batch, seq],
            marker_pos int64 [batch, markers], marker_mask bool [batch, markers], qtype int64 [batch]
    outputs logits f32 [batch, markers], act_logits f32 [batch, 2]

`markers` must be >= 2 (the traced head takes the top two probabilities; ONNXAgent pads to 2).
With `--cases`, every recorded forward pass of a cases.json (made by run_laya_cases.py) is replayed
through both graphs and the largest differences from the recorded torch logits are printed and written
to `onnx_check.json`: the peers for the encoder benchmark, and how far each one is from the reference.
"""
import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402


def export(agent, path, opset=17):
    import torch
    model = agent.model.eval()
    pad = agent.tok.pad_token_id
    B, L, K = 2, 48, 3
    ids = torch.full((B, L), agent.tok.cls_token_id, dtype=torch.long)
    ids[1, 40:] = pad
    att = torch.ones((B, L), dtype=torch.long)
    att[1, 40:] = 0
    mpos = torch.tensor([[3, 9, 15], [4, 11, 0]], dtype=torch.long)
    mmask = torch.tensor([[True, True, True], [True, True, False]])
    qtype = torch.tensor([0, 2], dtype=torch.long)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (ids, att, mpos, mmask, qtype), path, dynamo=False, opset_version=opset,
            input_names=["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype"],
            output_names=["logits", "act_logits"],
            dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                          "marker_pos": {0: "batch", 1: "markers"}, "marker_mask": {0: "batch", 1: "markers"},
                          "qtype": {0: "batch"}, "logits": {0: "batch", 1: "markers"},
                          "act_logits": {0: "batch"}})


def quantize(src, dst):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=False)


def replay(cases_path, graphs, pad_id):
    """Run every recorded forward pass of cases.json through each graph; largest |diff| per graph."""
    import numpy as np
    import onnxruntime as ort
    doc = json.load(open(cases_path, encoding="utf-8"))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = max(1, min(2, os.cpu_count() or 1))
    sessions = {name: ort.InferenceSession(p, sess_options=so, providers=["CPUExecutionProvider"])
                for name, p in graphs.items()}
    report = {name: {"max_abs_logit": 0.0, "max_abs_prob": 0.0, "max_abs_act_logit": 0.0, "argmax_agree": 0,
                     "rows": 0, "seconds": 0.0} for name in graphs}
    for case in doc["cases"]:
        rows = case.get("rows", [])
        r0 = 0
        for fw in case.get("forwards", []):
            batch = rows[r0:r0 + fw["rows"]]
            r0 += fw["rows"]
            L, K = fw["seq_len"], max(2, fw["marker_width"])
            n = len(batch)
            ids = np.full((n, L), pad_id, dtype=np.int64)
            att = np.zeros((n, L), dtype=np.int64)
            mpos = np.zeros((n, K), dtype=np.int64)
            mmask = np.zeros((n, K), dtype=bool)
            for i, r in enumerate(batch):
                ids[i, :len(r["input_ids"])] = r["input_ids"]
                att[i, :len(r["input_ids"])] = 1
                mpos[i, :len(r["markers"])] = r["markers"]
                mmask[i, :len(r["markers"])] = True
            qtype = np.array([r["qtype"] for r in batch], dtype=np.int64)
            ref = np.array(fw["logits"], dtype=np.float64)
            ref_act = np.array(fw["act_logits"], dtype=np.float64)
            for name, sess in sessions.items():
                t0 = time.perf_counter()
                logits, act = sess.run(["logits", "act_logits"], {"input_ids": ids, "attention_mask": att,
                                                                   "marker_pos": mpos, "marker_mask": mmask,
                                                                   "qtype": qtype})
                rep = report[name]
                rep["seconds"] += time.perf_counter() - t0
                for i, r in enumerate(batch):
                    k = len(r["markers"])
                    a, b = logits[i, :k].astype(np.float64), ref[i, :k]
                    pa, pb = np.exp(a - a.max()), np.exp(b - b.max())
                    pa, pb = pa / pa.sum(), pb / pb.sum()
                    rep["max_abs_logit"] = max(rep["max_abs_logit"], float(np.abs(a - b).max()))
                    rep["max_abs_prob"] = max(rep["max_abs_prob"], float(np.abs(pa - pb).max()))
                    rep["argmax_agree"] += int(a.argmax() == b.argmax())
                    rep["rows"] += 1
                rep["max_abs_act_logit"] = max(rep["max_abs_act_logit"],
                                               float(np.abs(act.astype(np.float64) - ref_act).max()))
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out-dir", help="default: <checkpoint>/onnx")
    ap.add_argument("--cases", help="a cases.json of this checkpoint to replay through the graphs")
    args = ap.parse_args()

    import torch
    import laya
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    out = args.out_dir or os.path.join(args.checkpoint, "onnx")
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        agent = laya.load(args.checkpoint, device="cpu")
    fp32, int8 = os.path.join(out, "laya.onnx"), os.path.join(out, "laya.int8.onnx")
    t0 = time.perf_counter()
    export(agent, fp32)
    print("%s (%.0f s)" % (fp32, time.perf_counter() - t0), file=sys.stderr)
    quantize(fp32, int8)
    print(int8, file=sys.stderr)
    if args.cases:
        report = replay(args.cases, {"onnx_fp32": fp32, "onnx_int8": int8}, agent.tok.pad_token_id)
        doc = {"generator": "tools/reference/export_laya_onnx.py", "versions": reftools.versions(),
               "cases": os.path.abspath(args.cases), "report": report}
        reftools.dump_json(doc, os.path.join(out, "onnx_check.json"))
        print(json.dumps(report, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
