#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<target>/), all made up here:
small valid inputs of every form each parser accepts, and a few near misses. Deterministic (no
randomness, HDF5 datasets without timestamps), so running it again gives the same bytes.

    python3 tests/fuzz/make_seeds.py          # rewrites tests/fuzz/corpus/

Needs numpy and h5py. The container format of the file-based harnesses (fuzz_common.h): the
arguments one per line ('@' = the harness's scratch folder), then each file as a line
"%%file NAME" followed by its bytes."""
import io
import json
import os
import shutil
import struct

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def container(args, files):
    """args: list of str; files: list of (name, bytes or str)."""
    out = b"".join(a.encode() + b"\n" for a in args)
    for i, (name, body) in enumerate(files):
        if isinstance(body, str):
            body = body.encode()
        out += b"%%file " + name.encode() + b"\n" + body + (b"\n" if i + 1 < len(files) else b"")
    return out


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def jl(rows):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# ---- job files -----------------------------------------------------------------------------------------------

def seeds_jobfile():
    src = os.path.join(os.path.dirname(os.path.dirname(HERE)), "jobs")
    for fn in sorted(os.listdir(src)):
        if fn.endswith(".json"):
            with open(os.path.join(src, fn), "rb") as f:
                put("jobfile", "repo-" + fn, f.read())
    tasks = {"t1": {"classes": [[0], [1, 2]]}, "t.2-x": {"classes": [[0], [1], [2]]}}
    docs = {
        "cm-strata": {"output_dir": "out", "seed": -5, "jobs": [
            {"name": "c", "kind": "cm", "input": "in.h5", "group": "/cm/", "bootstrap": 0,
             "strata": [{"covariate": "len", "bins": 3}, {"covariate": "src", "categorical": True}]}]},
        "bench-custom": {"output_dir": "/tmp/o", "description": "d\u00e9mo", "jobs": [
            {"name": "b", "kind": "benchmark", "input": "b.h5",
             "scheme": {"sections": {"S1": {"a": 1, "b": 2.5}, "T": {"ties": 1}}, "item_rule": "tie-credit",
                        "ties_subset": "ties"}, "allow_missing": True, "bootstrap": 10,
             "compare": [["m1", "m2"], ["m2", "m3"]]}]},
        "bench-v1": {"output_dir": "o", "seed": 9007199254740991, "jobs": [
            {"name": "b1", "kind": "benchmark", "input": "b.h5", "scheme": "rewardbench-v1", "prior_sets": True,
             "compare": "all"},
            {"name": "b2", "kind": "benchmark", "input": "b.h5", "scheme": "rewardbench-v2", "bootstrap": 0}]},
        "leak-all": {"output_dir": "o", "jobs": [
            {"name": "l", "kind": "leakage", "input": "l.h5", "bootstrap": 5, "tolerance": 0.5,
             "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth",
             "family": ["A", "B", "C"], "null_permutations": 7, "holdout_from": 202001,
             "signal_series": "Mkt-RF", "benign_attack": "none"}]},
        "probe-mrm": {"output_dir": "o", "jobs": [
            {"name": "p", "kind": "probe", "input": "p.h5", "tasks": tasks, "models": ["rm1", "rm2"],
             "lr_grid": [0.01, 1e-3], "seeds": [0, 3], "init": "zeros", "max_memory_mb": 16,
             "kmeans": {"k_per_class": 2, "iters": 5, "distance": "cosine", "tau": 1.5}}]},
        "probe-lbfgs": {"output_dir": "o", "jobs": [
            {"name": "p", "kind": "probe", "input": "p.h5", "mode": "lbfgs", "tasks": tasks, "l2_grid": [0, 0.1],
             "standardize": True, "tol": 1e-6, "max_iter": 50,
             "kmeans": {"distance": "mahalanobis", "tau": {"quantile": 0.5}}},
            {"name": "q", "kind": "probe", "input": "p.h5", "tasks": {"t1": {"classes": [[0], [1]]}},
             "kmeans": False}]},
    }
    for name, doc in docs.items():
        put("jobfile", name + ".json", json.dumps(doc, indent=1, ensure_ascii=False))
    # near misses the parser must refuse with a message
    put("jobfile", "bad-dupkey.json", '{"output_dir": "o", "output_dir": "p", "jobs": []}')
    put("jobfile", "bad-trailing.json", '{"output_dir": "o", "jobs": [{"name": "a", "kind": "cm", "input": "x"}]} x')
    put("jobfile", "bad-escape.json", '{"output_dir": "o\\u0000", "jobs": [{"name": "a", "kind": "cm", "input": "x"}]}')


# ---- reply parsers ---------------------------------------------------------------------------------------------

def seeds_numleak_parse():
    replies = ["3.5%", "about 2 percent", "It rose by 150 bps.", "\u22121.2 %", "-0.4% to 0.6%",
               "I cannot provide real-time data.", "0.25", "101", "5e3", "\uff13\uff0e\uff15\uff05",
               "approximately 12 basis points", "2\u20133 PERCENT", "roughly 7.25", "\u0663.\u0665%",
               "March 2020 was higher than April 2020.", "Between January 2019 and May 2019, my answer is May 2019.",
               "I don't have data for June 1999 or July 1999.", "Comparing August 2001 and September 2001: August 2001",
               "2020-03", "202003", "March 2020", "mar 2020", "2020-03-15", "Sept 2020",
               "   \u00a0 4.0 \u2009", "x" * 40 + " 5", "nan%", "99999999999999999999999999%"]
    texts = [r.encode() for r in replies] + [b"\xff\xfe 5% not UTF-8", b"3.5\xe2\x80 %"]
    for i, b in enumerate(texts):
        put("numleak_parse", f"reply-{i:02d}", bytes([i * 7 % 256, i * 13 % 256]) + b)
    # bytes to read as log-probabilities: two tokens of three alternatives
    put("numleak_parse", "entropy", bytes([0, 0, 3, 0, 4, 0, 8, 0, 12, 2, 1, 0, 0]))


# ---- cm-csv --------------------------------------------------------------------------------------------------

def seeds_cm_csv():
    rows = ["run,pair,user,reward_chosen,reward_rejected,in_train,len"]
    for r in range(2):
        for p in range(4):
            rows.append(f"{r},{p},{p // 2},{0.5 * p - r:.2f},{0.1 * r - 0.25:.2f},{(p // 2 + r) % 2},{p * 3}")
    plain = "\n".join(rows) + "\n"
    put("import_cm_csv", "plain", container(["@in.csv"], [("in.csv", plain)]))
    put("import_cm_csv", "group", container(["@in.csv", "--group", "/x/cm"], [("in.csv", plain)]))
    quoted = ("\ufeffpair,run,\"user\",in_train,reward_rejected,reward_chosen,\"src, kind\"\r\n"
              "\"p,1\",a,u7,true,-1e-3,2.5,NA\r\n\"p,1\",b,u7,FALSE,0,1,NA\r\n"
              "p2,a,\"u\"\"8\",0,1.5,-2,nan\r\np2,b,\"u\"\"8\",1,3,4,null\r\n")
    put("import_cm_csv", "quoted-bom-crlf", container(["@in.csv"], [("in.csv", quoted)]))
    put("import_cm_csv", "missing-pair", container(["@in.csv"], [("in.csv", plain.rsplit("\n", 2)[0] + "\n")]))
    put("import_cm_csv", "hex-number", container(["@in.csv"], [("in.csv", plain.replace("0.50", "0x5", 1))]))
    put("import_cm_csv", "bad-number", container(["@in.csv"], [("in.csv", plain.replace("0.50", "0.5.0", 1))]))


# ---- rewardbench (v1) -------------------------------------------------------------------------------------------

def seeds_rewardbench():
    par = {"id": [1, 2, 3, 4], "subset": ["alpacaeval-easy", "alpacaeval-easy", "math-prm", "hep-go"],
           "scores_chosen": [1.5, [0.25], -2.0, 3.0], "scores_rejected": [0.5, [0.75], -3.0, 3.0],
           "results": [1, 0, 1, 0], "model": "rm-a"}
    put("import_rewardbench", "parallel", container(["@a.json"], [("a.json", json.dumps(par))]))
    rows = [{"_record": "metadata", "model": "rm-b"}] + [
        {"id": i + 1, "subset": s, "scores_chosen": c, "scores_rejected": r}
        for i, (s, c, r) in enumerate(zip(par["subset"], [2.0, 1.0, 0.0, -1.0], [1.0, 1.5, -0.5, -1.0]))]
    put("import_rewardbench", "two-models", container(["@a.json", "@b.jsonl", "--group", "/bench"],
                                                      [("a.json", json.dumps(par)), ("b.jsonl", jl(rows))]))
    gen = [{"id": "x1", "subset": "llmbar-natural", "results": 1}, {"id": "x2", "subset": "llmbar-natural",
                                                                    "results": 0.5}, {"id": "x3", "subset": "shp", "results": False}]
    put("import_rewardbench", "results-list", container(["@judge.json"], [("judge.json", json.dumps(gen))]))
    acc = {"alpacaeval-easy": 0.9, "math-prm": 0.5, "model": "rm-c"}
    summ = {"model": "rm-d", "extra_results": {"alpacaeval-easy": 0.8, "math-prm": 1.01}}
    put("import_rewardbench", "accuracy", container(["@c.json", "@d.json"], [("c.json", json.dumps(acc)),
                                                                              ("d.json", json.dumps(summ))]))
    put("import_rewardbench", "bad-nan", container(["@a.json"], [("a.json", json.dumps(par).replace("1.5", "NaN"))]))


# ---- rewardbench2 ----------------------------------------------------------------------------------------------

def seeds_rewardbench2():
    rows = [{"_record": "metadata", "model": "m2"},
            {"id": "f1", "subset": "Factuality", "num_correct": 1, "scores": [0.9, 0.1, 0.2, 0.3]},
            {"id": "ref:1", "subset": "Ties", "num_correct": 2, "scores": [1.0, 1.0, 0.5]},
            {"id": "tied:1", "subset": "Ties", "num_correct": 1, "scores": [[2.0], 1.0]},
            {"id": 7, "subset": "Math", "num_correct": 1, "scores": [-1, 0], "results": 1}]
    put("import_rewardbench2", "jsonl", container(["@m2.jsonl"], [("m2.jsonl", jl(rows))]))
    par = {"id": ["a", "b"], "subset": ["Focus", "Safety"], "num_correct": [1, 2], "scores": [[1, 0], [3, 2, 1]],
           "model": "m3"}
    other = dict(par, model="m4", scores=[[0, 1], [1, 2, 3]])
    put("import_rewardbench2", "parallel-two", container(["@m3.json", "@m4.json"],
                                                         [("m3.json", json.dumps(par)), ("m4.json", json.dumps(other))]))
    acc = {"Factuality": 0.7, "Precise IF": 0.3, "Math": 0.5, "Safety": 0.9, "Focus": 0.8, "Ties": -0.005, "model": "m5"}
    put("import_rewardbench2", "accuracy", container(["@m5.json", "--group", "/b2"], [("m5.json", json.dumps(acc))]))
    put("import_rewardbench2", "bad-num-correct", container(["@m2.jsonl"], [("m2.jsonl", jl(rows).replace(
        '"num_correct": 1, "scores": [-1', '"num_correct": 2, "scores": [-1'))]))


# ---- numleak ---------------------------------------------------------------------------------------------------

FRENCH = ("This file was created by a made-up script.\n\n"
          ",Mkt-RF,SMB,HML,RF\n"
          "202001,  -0.11,  -3.09,  -6.25,   0.13\n"
          "202002,  -8.13,   1.07,  -3.80,   0.12\n"
          "202003, -13.39,  -4.84, -14.12,   0.13\n\n"
          " Annual Factors: January-December \n,Mkt-RF,SMB,HML,RF\n  2020,   1.0,   2.0,   3.0,  0.4\n")
FRENCH5 = ",Mkt-RF,SMB,HML,RMW,CMA,RF\n202001,-0.11,-3.09,-6.25,-1.2,-2.3,0.13\n202002,-8.13,1.07,-99.99,0.5,-1.0,0.12\n"
MOM = "Made-up momentum\n,Mom   \n202001,  -0.5\n202002,  1.25\n202003,  -999\n"
FRED = "observation_date,UNRATE\n2019-01-01,4.0\n2019-02-01,.\n2020-01-01,3.5\n2020-02-01,3.6\n"


def seeds_numleak():
    cells = [{"model_name": "A", "factor": "Mkt-RF", "month": "2020-01", "response": "-0.1%", "error": None},
             {"model_name": "A", "factor": "SMB", "month": 202002, "response": "about 1 percent", "seed": 2},
             {"model_name": "B", "factor": "HML", "month": "March 2020", "response": "I can't say.", "error": ""},
             {"model_name": "B", "factor": "Mom", "month": "2020-02", "response": None, "error": "timeout"}]
    put("import_numleak", "ff-dir", container(
        ["--truth-numleak", "@.", "--panel", "@p.jsonl"],
        [("p.jsonl", jl(cells)), ("F-F_Research_Data_Factors.csv", FRENCH),
         ("F-F_Research_Data_5_Factors_2x3.csv", FRENCH5), ("F-F_Momentum_Factor.csv", MOM)]))
    nested = [{"q": {"m": "A", "f": "u"}, "when": "2020-01", "r": "1.5%", "key": "k1", "ts": 10.0},
              {"q": {"m": "A", "f": "u"}, "when": "2020-01", "r": None, "error": "429", "key": "k1", "ts": 30.0},
              {"q": {"m": "b-old", "f": "u"}, "when": "202002", "r": "3.6", "key": "k2", "skip": True},
              {"q": {"m": "A", "f": "u"}, "when": "Feb 2020", "r": "NaN", "truth": 3.6, "key": "k3"}]
    tok = [{"token": "x", "logprob": -0.7, "top_logprobs": [{"token": "y", "logprob": -0.7},
                                                             {"token": "z", "logprob": -1.4}]},
           {"token": "w", "logprob": 0.0, "top_logprobs": [{"token": "w", "logprob": 0.0}]}]
    probe = [{"factor": "u", "month": "2020-02", "response": "3.6", "tokens": tok, "model_name": "A"}]
    rank = [{"model_name": "A", "month": "2020-01", "m2": "2020-02", "response": "February 2020 was higher."},
            {"model_name": "A", "month": "2020-01", "m2": "2020-02", "response": "I cannot answer.", "pick": None}]
    sig = [{"model_name": "A", "month": "2020-02", "response": "0.4", "recall": 2.1}]
    dfn = [{"model_name": "A", "month": "2020-01", "defense": "soft", "adv_idx": -1, "response": "2.0%"},
           {"model_name": "A", "month": "2020-02", "defense": "soft", "adv_idx": 3, "response": "No."}]
    args = ["--truth", "u=@fred.csv,UNRATE", "--nan-truth", "missing",
            "--panel", "@n.jsonl", "--field", "model=q.m", "--field", "series=q.f", "--field", "month=when",
            "--field", "reply=r", "--field", "key=key", "--field", "truth=truth", "--map", "model:b-old=B",
            "--where", "skip=null|false", "--set", "variant=V1",
            "--panel", "@e.jsonl", "--field", "logprobs=tokens", "--set", "variant=V1",
            "--panel", "@r.jsonl", "--as", "rank", "--set", "series=u", "--field", "month_b=m2",
            "--panel", "@s.jsonl", "--as", "signal", "--field", "recall=recall",
            "--panel", "@d.jsonl", "--as", "defense", "--field", "attack=adv_idx", "--map", "attack:-1=benign"]
    put("import_numleak", "roles", container(args, [("fred.csv", FRED), ("n.jsonl", jl(nested)), ("e.jsonl", jl(probe)),
                                                    ("r.jsonl", jl(rank)), ("s.jsonl", jl(sig)), ("d.jsonl", jl(dfn))]))
    yoy = "month,value\n" + "".join(f"{2019 + m // 12}-{m % 12 + 1:02d},{100 + m}\n" for m in range(15))
    fict = [{"model_name": "A", "factor": "Zeta", "month": "2020-02", "response": "2%"},
            {"model_name": "A", "factor": "cpi", "month": "2020-03", "response": "1.5%", "entropy": 0.25}]
    put("import_numleak", "yoy-fictional", container(
        ["--truth", "cpi=@cpi.csv,value,yoy", "--no-replies", "--group", "/leak2", "--panel", "@f.jsonl",
         "--fictional", "--panel", "@g.jsonl", "--field", "entropy=entropy"],
        [("cpi.csv", yoy), ("f.jsonl", jl(fict[:1])), ("g.jsonl", jl(fict[1:]))]))
    put("import_numleak", "no-truth", container(
        ["--no-truth", "Zeta", "--panel", "@f.jsonl", "--fictional", "--field", "variant=", "--set", "seed=3"],
        [("f.jsonl", jl(fict[:1]))]))
    put("import_numleak", "python-nan", container(
        ["--no-truth", "s", "--panel", "@p.jsonl"],
        [("p.jsonl", '{"model_name": "A", "factor": "s", "month": "2020-01", "response": "1%", "ts": NaN}\n'
                     '{"model_name": "A", "factor": "s", "month": "2020-01", "response": "2%", "ts": -Infinity}\n')]))


# ---- features --------------------------------------------------------------------------------------------------

def npy(a, version=None):
    b = io.BytesIO()
    if version:
        np.lib.format.write_array(b, a, version=version)
    else:
        np.save(b, a)
    return b.getvalue()


def safetensors(tensors):
    """tensors: list of (name, dtype string, shape, raw bytes)."""
    header, off, data = {}, 0, b""
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def seeds_features():
    X = (np.arange(24, dtype=np.float32).reshape(8, 3) - 10) / 4
    labels = "label,split\n0,train\n1,0\n2,validation\n,val\nNA,test\n1,2\n-1,dev\n0,TRAINING\n"
    put("import_features", "npy-csv", container(["--task", "t", "@x.npy", "@l.csv"],
                                                [("x.npy", npy(X)), ("l.csv", labels)]))
    labj = "".join(json.dumps({"label": [0, 1, None, 2, 1, 0, -1, 1][i], "split": ["train", 1, 2, "test", 0, 0, 1, 2][i]})
                   + "\n" for i in range(8))
    put("import_features", "npy-versions", container(
        ["--model", "rm1", "--task", "a", "@x2.npy", "@l.jsonl", "--task", "b", "@x3.npy", "@l.jsonl",
         "--infer", "@xi.npy"],
        [("x2.npy", npy(X.astype(">f4"), (2, 0))), ("x3.npy", npy(X.astype("<f8"), (3, 0))),
         ("xi.npy", npy(X[:2].astype("<f2"))), ("l.jsonl", labj)]))
    bf = (X.view(np.uint32) >> 16).astype("<u2").tobytes()
    st = safetensors([("feat", "BF16", X.shape, bf), ("other", "F32", (2, 2), np.ones((2, 2), "<f4").tobytes())])
    put("import_features", "safetensors", container(
        ["--group", "/pr", "--tensor", "feat", "--task", "t", "@x.safetensors", "@l.csv"],
        [("x.safetensors", st), ("l.csv", labels)]))
    st2 = safetensors([("x", "F16", X.shape, X.astype("<f2").tobytes())])
    st3 = safetensors([("x", "F64", X.shape, X.astype("<f8").tobytes())])
    put("import_features", "safetensors-two-models", container(
        ["--model", "m1", "--task", "t", "@a.safetensors", "@l.csv", "--model", "m2", "--task", "t",
         "@b.safetensors", "@l.csv"],
        [("a.safetensors", st2), ("b.safetensors", st3), ("l.csv", labels)]))
    put("import_features", "bad-rows", container(["--task", "t", "@x.npy", "@l.csv"],
                                                 [("x.npy", npy(X[:7])), ("l.csv", labels)]))


# ---- HDF5 inputs for the layout checks -------------------------------------------------------------------------

def h5bytes(build, **kw):
    """An HDF5 file built by build(File) in memory, without timestamps."""
    b = io.BytesIO()
    with h5py.File(b, "w", track_order=False, **kw) as f:
        build(f)
    return b.getvalue()


def ds(g, name, data, **kw):
    g.create_dataset(name, data=data, track_times=False, **kw)


STR = h5py.string_dtype("utf-8")


def cm_file(chunked):
    kw = {"chunks": True, "compression": "gzip", "shuffle": True} if chunked else {}

    def build(f):
        g = f.create_group("cm")
        P, R = 6, 3
        rc = np.linspace(-1, 1, P * R).reshape(P, R)
        ds(g, "reward_chosen", rc, **kw)
        ds(g, "reward_rejected", rc[::-1] * 0.5, **kw)
        user = np.array([0, 0, 1, 1, 2, 2])
        ds(g, "in_train", ((user[:, None] + np.arange(R)) % 2).astype(np.uint8), **kw)
        if chunked:
            ds(g, "user", np.array(["u0", "u0", "u1", "u1", "u2", "u2"], dtype=object), dtype=STR)
        else:
            ds(g, "user", user.astype(np.int64))
        ds(g, "covariates/len", np.arange(P, dtype=np.float64))
        ds(g, "covariates/src", np.array([1, 2, 1, 2, 1, 2], dtype=np.int32))
    return h5bytes(build)


def bench_file(form):
    def build(f):
        g = f.create_group("bench")
        ds(g, "model_names", np.array(["m1", "m2"], dtype=object), dtype=STR)
        if form == "accuracy":
            ds(g, "subset_names", np.array(["Factuality", "Math", "Ties"], dtype=object), dtype=STR)
            ds(g, "subset_accuracy", np.array([[0.5, 0.75, np.nan], [1.0, 0.0, 0.25]]))
            return
        ds(g, "subset_names", np.array(["Factuality", "Ties"], dtype=object), dtype=STR)
        ds(g, "item_subset", np.array([0, 0, 1, 1], dtype=np.int32))
        ds(g, "item_offset", np.array([0, 3, 5, 8, 10], dtype=np.int64))
        ds(g, "item_n_correct", np.array([1, 1, 2, 1], dtype=np.int32))
        ds(g, "scores", np.arange(20, dtype=np.float64).reshape(2, 10) % 7)
        ds(g, "item_id", np.array(["a", "b", "ref:1", "tied:1"], dtype=object), dtype=STR)
        ds(g, "given_credit", np.array([[np.nan, 1.0, np.nan, np.nan], [0.5, np.nan, np.nan, np.nan]]))
    return h5bytes(build)


def leak_file():
    def build(f):
        g = f.create_group("leak")
        ds(g, "model_names", np.array(["A", "B"], dtype=object), dtype=STR)
        ds(g, "series_names", np.array(["Mkt-RF", "SMB", "HML"], dtype=object), dtype=STR)
        ds(g, "variant_names", np.array(["default"], dtype=object), dtype=STR)
        ds(g, "series_fictional", np.zeros(3, dtype=np.uint8))
        Q = 8
        ds(g, "model", np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.int32))
        ds(g, "series", np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype=np.int32))
        ds(g, "variant", np.zeros(Q, dtype=np.int32))
        ds(g, "seed", np.zeros(Q, dtype=np.int32))
        ds(g, "month", np.array([202001, 202001, 202002, 202002, 202001, 202002, 202001, 202002], dtype=np.int32))
        ds(g, "value", np.array([0.1, -3.0, np.nan, 1.5, 2.0, -6.0, np.nan, 0.5]))
        ds(g, "status", np.array([0, 0, 1, 0, 0, 0, 2, 0], dtype=np.uint8))
        ds(g, "entropy_bits", np.array([0.5, np.nan, 1.0, 0.0, 2.0, 0.1, np.nan, 0.3]))
        ds(g, "truth_series", np.array([0, 1, 2, 0, 1, 2], dtype=np.int32))
        ds(g, "truth_month", np.array([202001, 202001, 202001, 202002, 202002, 202002], dtype=np.int32))
        ds(g, "truth_value", np.array([-0.11, -3.09, -6.25, -8.13, 1.07, -3.8]))
        r = g.create_group("rank")
        ds(r, "model", np.array([0, 1], dtype=np.int32))
        ds(r, "series", np.array([0, 0], dtype=np.int32))
        ds(r, "month_a", np.array([202001, 202001], dtype=np.int32))
        ds(r, "month_b", np.array([202002, 202002], dtype=np.int32))
        ds(r, "pick", np.array([1, -1], dtype=np.int8))
        s = g.create_group("signal")
        ds(s, "model", np.array([0], dtype=np.int32))
        ds(s, "month", np.array([202002], dtype=np.int32))
        ds(s, "signal", np.array([0.4]))
        ds(s, "recall", np.array([np.nan]))
        d = g.create_group("defense")
        ds(d, "defense", np.array([0, 0], dtype=np.int32))
        ds(d, "attack", np.array([0, 1], dtype=np.int32))
        ds(d, "model", np.array([0, 1], dtype=np.int32))
        ds(d, "month", np.array([202001, 202002], dtype=np.int32))
        ds(d, "blocked", np.array([0, 1], dtype=np.uint8))
        ds(d, "defense_names", np.array(["soft"], dtype=object), dtype=STR)
        ds(d, "attack_names", np.array(["benign", "a3"], dtype=object), dtype=STR)
    return h5bytes(build)


def probe_file(kind):
    N, D = 24, 4
    X = ((np.arange(N * D).reshape(N, D) * 7 % 11) - 5).astype(np.float32) / 2
    label = (np.arange(N) % 3).astype(np.int32)
    label[5] = -1
    split = np.array([0] * 14 + [1] * 5 + [2] * 5, dtype=np.uint8)

    def build(f):
        for rm in (["rm1", "rm2"] if kind == "models" else [""]):
            base = "probe/" + rm + "/" if rm else "probe/"
            g = f.create_group(base + "t")
            if kind == "f16":
                ds(g, "X", X.astype(np.float16))
            elif kind == "bf16":
                t = h5py.h5t.IEEE_F32LE.copy()
                t.set_fields(15, 7, 8, 0, 7)
                t.set_size(2)
                t.set_ebias(127)
                t.set_precision(16)
                bits = (X.view(np.uint32) >> 16).astype("<u2")
                sid = h5py.h5s.create_simple(bits.shape)
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_obj_track_times(False)
                d = h5py.h5d.create(g.id, b"X", t, sid, dcpl=dcpl)
                mt = t.copy()
                d.write(h5py.h5s.ALL, h5py.h5s.ALL, bits, mtype=mt)
            elif kind == "f64-chunked":
                ds(g, "X", X.astype(np.float64), chunks=(8, D), compression="gzip", shuffle=True)
            else:
                ds(g, "X", X)
            ds(g, "label", label)
            ds(g, "split", split)
            ds(f, base + "infer/X", X[:6] + 0.5)
    return h5bytes(build)


def seeds_h5_layout():
    tasks = {"t": {"classes": [[0], [1, 2]]}}

    def job(jobs):
        return json.dumps({"output_dir": "out", "seed": 1, "jobs": jobs})
    put("h5_layout", "cm", container([], [("job.json", job([{"name": "c", "kind": "cm", "input": "in.h5",
                                                               "strata": [{"covariate": "len", "bins": 2},
                                                                          {"covariate": "src", "categorical": True}]}])),
                                          ("in.h5", cm_file(False))]))
    put("h5_layout", "cm-chunked", container([], [("job.json", job([{"name": "c", "kind": "cm", "input": "in.h5"}])),
                                                  ("in.h5", cm_file(True))]))
    custom = {"sections": {"F": {"Factuality": 1}, "T": {"Ties": 1}}, "item_rule": "tie-credit", "ties_subset": "Ties"}
    put("h5_layout", "bench-items", container([], [("job.json", job([{"name": "b", "kind": "benchmark", "input": "in.h5",
                                                                      "scheme": custom, "compare": "all"}])),
                                                   ("in.h5", bench_file("items"))]))
    put("h5_layout", "bench-accuracy", container([], [("job.json", job([{"name": "b", "kind": "benchmark",
                                                                         "input": "in.h5", "scheme": "rewardbench-v2",
                                                                         "allow_missing": True}])),
                                                      ("in.h5", bench_file("accuracy"))]))
    put("h5_layout", "leakage", container([], [("job.json", job([{"name": "l", "kind": "leakage", "input": "in.h5",
                                                                  "family": ["Mkt-RF", "SMB", "HML"],
                                                                  "holdout_from": 202002}])),
                                               ("in.h5", leak_file())]))
    for kind in ("f32", "f16", "bf16", "f64-chunked", "models"):
        j = {"name": "p", "kind": "probe", "input": "in.h5", "tasks": tasks}
        if kind == "models":
            j["models"] = ["rm1", "rm2"]
        if kind == "f16":
            j.update(mode="lbfgs", kmeans={"distance": "mahalanobis"})
        put("h5_layout", "probe-" + kind, container([], [("job.json", job([j])), ("in.h5", probe_file(kind))]))
    put("h5_layout", "two-jobs", container([], [("job.json", job([
        {"name": "c", "kind": "cm", "input": "c.h5"}, {"name": "l", "kind": "leakage", "input": "l.h5"}])),
        ("c.h5", cm_file(False)), ("l.h5", leak_file())]))


def main():
    # every seed is rewritten except the regression inputs (regress-*: inputs of past findings, kept by hand)
    for root, _, files in os.walk(CORPUS):
        for fn in files:
            if not fn.startswith("regress-"):
                os.remove(os.path.join(root, fn))
    seeds_jobfile()
    seeds_numleak_parse()
    seeds_cm_csv()
    seeds_rewardbench()
    seeds_rewardbench2()
    seeds_numleak()
    seeds_features()
    seeds_h5_layout()
    n = sum(len(files) for _, _, files in os.walk(CORPUS))
    print(f"make_seeds: {n} seeds under {os.path.relpath(CORPUS)}")


if __name__ == "__main__":
    main()
