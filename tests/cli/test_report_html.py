"""`rmdiag report`: one self-contained HTML page from the demo reports (made by copies of scripts/make_demo_*.sh) and
a leakage panel with every control. The page has no external reference, the same reports give the same bytes (two
runs, a plain process and 3 ranks), reports made on 1 and on 3 ranks give pages that differ only in the provenance
(ranks, seconds); bad paths are exit 2. Then a real browser: headless Chromium (Debian's package, installed by
scripts/setup.sh --tests) with the network off opens the page; the test fails on any console error, a figure missing
or a figure with no marks. With RMDIAG_TEST_SHOTS=1, screenshots of every report's figures land in
RMDIAG_TEST_TMP/report_html/shots for the developer to look at. Without Chromium the browser part is skipped (exit 77 after the other checks passed)."""
import os
import re
import shutil
import subprocess
import tempfile

from leakdata import gen_panel
from rdtest import *

d = scratch("report_html")
env = dict(os.environ, RMDIAG=RMDIAG)

# ---- the demo inputs and reports, in the scratch folder ----
os.makedirs(os.path.join(d, "scripts"))
os.makedirs(os.path.join(d, "jobs"))
for s in ("make_demo_data.sh", "make_demo_benchmark.sh", "make_demo_leakage.sh", "make_demo_probe.sh"):
    shutil.copy(os.path.join(REPO, "scripts", s), os.path.join(d, "scripts", s))
    p = subprocess.run(["bash", os.path.join(d, "scripts", s)], cwd=d, env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"{s}: exit {p.returncode} ({p.stderr.strip()[-300:]})")
code, out, err = run(["import", "cm-csv", "jobs/data/demo_pairs.csv", "-o", "jobs/data/demo_pairs.h5"], cwd=d)
check(code == 0, f"cm-csv import: {err.strip()}")
shutil.copy(os.path.join(REPO, "jobs", "demo.json"), os.path.join(d, "jobs", "demo.json"))
code, out, err = run(["run", "jobs/demo.json"], ranks=2, cwd=d)
check(code == 0, f"demo run on 2 ranks: exit {code} ({err.strip()[-400:]})")
# a leakage panel with every control (fictional series, ranking, signal, defenses, entropy)
gen_panel(os.path.join(d, "panel.h5"), M=3, S=4, V=1, K=2, T=48, seed=3, chunked=False)
write_job(os.path.join(d, "panel.json"), [
    {"name": "panel", "kind": "leakage", "input": "panel.h5", "bootstrap": 100, "family": ["S0", "S1", "S2"],
     "null_permutations": 100, "holdout_from": 199201, "signal_series": "S0"}], output_dir="out/demo")
code, out, err = run(["run", os.path.join(d, "panel.json")])
check(code == 0, f"panel run: exit {code} ({err.strip()})")

demo = os.path.join(d, "out", "demo")
page = os.path.join(d, "a.html")
code, out, err = run(["report", demo, "-o", page])
check(code == 0, f"report: exit {code} ({err.strip()})")
check(re.match(r"^.*a\.html: 7 reports, \d+ bytes\n$", out) is not None, f"report prints the page and its size: {out!r}")
html = open(page, encoding="utf-8").read()
size = len(html.encode())
check(size < 5_000_000, f"page under 5 MB ({size} bytes)")
print(f"demo page: {size} bytes")

# self-contained: no src/href to anything outside the page, no sourceMappingURL, the three bundles inlined
outside = re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)
check(not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", outside), "no external script, style, image or frame")
check("http://" not in outside and "https://" not in outside, "no web address in the page's own markup")
check("sourceMappingURL" not in html, "source-map comments dropped")
check(html.count("<script>") == 5 and "vegaEmbed" in html, "console hook, vega, vega-lite, vega-embed and the renderer")
for k in ("cm demo-cm", "benchmark demo-rb1", "benchmark demo-rb2", "leakage demo-leakage", "leakage panel",
          "probe demo-probe:", "probe demo-probe-lbfgs"):
    check(k in html, f"the page has {k}")
check("Provenance" in html and "spec_sha256" in html and "SYNTHETIC demo data" in html, "provenance and description")
check("Across reports" in html and "mode mrmbench (demo-probe) reaches" in html, "the demo's mode gap is flagged")
figs = re.findall(r'<figure class="rd-figure" id="fig-(\d+)" data-name="([^"]+)" data-report="(\d+)"', html)
names = {n for _, n, _ in figs}
want = {"memorization_map", "cm_histogram", "strata_forest", "user_cm", "leaderboard_forest", "section_heatmap",
        "comparison_matrix", "estimate_vs_truth", "signature", "selectivity", "holdout", "defenses", "entropy",
        "accuracy", "validation_curves", "confusion", "reliance", "d_min"}
check(want <= names, f"every kind's figures: missing {want - names}")
check(all("<figcaption><b>Figure" in html for _ in [0]) and html.count("<figcaption>") == len(figs), "each has a caption")

# ---- the same reports give the same bytes: twice, and as 3 ranks ----
code, out, err = run(["report", demo, "-o", os.path.join(d, "b.html")])
check(open(os.path.join(d, "b.html"), "rb").read() == html.encode(), "two runs: identical bytes")
code, out, err = run(["report", demo, "-o", os.path.join(d, "c.html")], ranks=3)
check(code == 0 and open(os.path.join(d, "c.html"), "rb").read() == html.encode(), f"3 ranks: identical bytes ({err})")

# reports made on 3 ranks: the page differs only in the provenance's ranks and seconds
demo3 = os.path.join(d, "jobs", "demo3.json")
jf = json.load(open(os.path.join(d, "jobs", "demo.json")))
jf["output_dir"] = "../out/demo3"
json.dump(jf, open(demo3, "w"))
code, out, err = run(["run", demo3], ranks=3, cwd=d)
for f in os.listdir(os.path.join(d, "out", "demo")):
    if f.startswith("panel."):
        shutil.copy(os.path.join(d, "out", "demo", f), os.path.join(d, "out", "demo3", f))
code, out, err = run(["report", os.path.join(d, "out", "demo3"), "-o", os.path.join(d, "three.html")])


def masked(text):
    text = re.sub(r"<tr><td>(ranks|seconds)</td><td>[^<]*</td></tr>", "", text)
    return text.replace("/out/demo3/", "/out/demo/")


check(masked(open(os.path.join(d, "three.html")).read()) == masked(html),
      "reports made on 1 and 3 ranks: the same page but for ranks and seconds")

# ---- bad paths ----
code, out, err = run(["report", os.path.join(d, "nope.json"), "-o", os.path.join(d, "x.html")])
check(code == 2 and "nope.json: cannot open the report" in err and not os.path.exists(os.path.join(d, "x.html")),
      f"missing report: exit 2 and no page ({code} {err.strip()})")
os.makedirs(os.path.join(d, "lonely"))
shutil.copy(os.path.join(demo, "demo-cm.json"), os.path.join(d, "lonely", "demo-cm.json"))
code, out, err = run(["report", os.path.join(d, "lonely"), "-o", os.path.join(d, "x.html")])
check(code == 2 and "demo-cm.h5: no such file" in err, f"report without its .h5: exit 2 ({err.strip()})")
shutil.copy(os.path.join(demo, "demo-rb1.h5"), os.path.join(d, "lonely", "demo-cm.h5"))
code, out, err = run(["report", os.path.join(d, "lonely", "demo-cm.json"), "-o", os.path.join(d, "x.html")])
check(code == 2 and "were not written together" in err, f"an .h5 of another report: exit 2 ({err.strip()})")
code, out, err = run(["report", demo])
check(code == 2 and "missing -o FILE.html" in err, f"no -o: exit 2 ({err.strip()})")
code, out, err = run(["report", demo, "-o", os.path.join(d, "no", "such", "x.html")])
check(code == 2 and "does not exist" in err, f"-o in a missing folder: exit 2 ({err.strip()})")

# a sweep's folder: the summary (no .h5) is left out of the page; given by name it is exit 2
write_job(os.path.join(d, "sweep.json"), [{"name": "sw", "kind": "cm", "input": "jobs/data/demo_pairs.h5", "bootstrap": 20,
                                            "sweep": {"seed": [1, 2]}}], output_dir="out/sweep")
code, out, err = run(["run", os.path.join(d, "sweep.json")])
check(code == 0 and os.path.exists(os.path.join(d, "out", "sweep", "sw.summary.json")), f"sweep run: {err.strip()}")
code, out, err = run(["report", os.path.join(d, "out", "sweep"), "-o", os.path.join(d, "sweep.html")])
check(code == 0 and ": 2 reports," in out, f"a sweep's folder: its 2 jobs' reports, not the summary ({out} {err})")
code, out, err = run(["table", os.path.join(d, "out", "sweep", "sw.summary.json")])
check(code == 2 and "a sweep summary" in err, f"a sweep summary given by name: exit 2 ({err.strip()})")

# ---- the browser ----
chromium = shutil.which("chromium") or shutil.which("chromium-browser")


def browse(path, extra):
    """Chromium, headless, its own empty profile, network off (a network namespace when we may make one, and a
    dead proxy in any case). Returns (exit status, stdout, stderr)."""
    prof = tempfile.mkdtemp(dir=d)
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-extensions", "--disable-sync", f"--user-data-dir={prof}",
           "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=60000",
           "--enable-logging=stderr", "--v=0"] + extra + ["file://" + os.path.abspath(path)]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-n"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    shutil.rmtree(prof, ignore_errors=True)
    return p.returncode, p.stdout, p.stderr


if chromium:
    code, dom, berr = browse(page, ["--dump-dom"])
    body = re.findall(r"<body( data-[^>]*)>", dom)
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body[-1])) if body else {}
    check(code == 0 and attrs.get("data-rendered") == str(len(figs)), f"every figure drawn: {attrs} of {len(figs)}")
    check(attrs.get("data-failed") == "0" and attrs.get("data-console") == "[]", f"no error in the page: {attrs}")
    # the page's own messages (Chromium's internal chrome:// pages log about fonts and the dead proxy)
    console = [l for l in berr.splitlines() if ("CONSOLE" in l or "Uncaught" in l) and "chrome://" not in l]
    check(not console, f"no console message: {console[:5]}")
    drawn = re.findall(r'<figure[^>]*data-name="([^"]+)"[^>]*data-marks="(\d+)" data-status="ok"', dom)
    check(len(drawn) == len(figs), f"each figure reports its marks: {len(drawn)} of {len(figs)}")
    empty = [n for n, m in drawn if int(m) == 0]
    check(not empty, f"every figure has marks: empty {empty}")
    print("render ms (Chromium, from navigation start):", attrs.get("data-render-ms"))
    # screenshots (RMDIAG_TEST_SHOTS=1; a browser start each): one page per report, tall enough for its figures
    shots = os.path.join(d, "shots")
    os.makedirs(shots)
    for f in sorted(os.listdir(demo)) if os.environ.get("RMDIAG_TEST_SHOTS") == "1" else []:
        if not f.endswith(".json"):
            continue
        one = os.path.join(shots, f[:-5] + ".html")
        code, out, err = run(["report", os.path.join(demo, f), "-o", one])
        n_fig = len(re.findall(r'class="rd-figure"', open(one).read()))
        code, _, _ = browse(one, [f"--screenshot={one[:-5]}.png", f"--window-size=1280,{900 + 560 * n_fig}"])
        check(code == 0 and os.path.getsize(one[:-5] + ".png") > 10000, f"screenshot of {f}")
    if os.environ.get("RMDIAG_TEST_SHOTS") == "1":
        print("screenshots in", shots)
else:
    import rdtest
    if not rdtest._failures:
        print("SKIP (browser part): no chromium; scripts/setup.sh --tests installs it")
        sys.exit(SKIP)
done()
