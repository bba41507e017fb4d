"""The SVG flame graph of a real recording, used in a real browser.

ratio.py burns CPU about 50/30/20 in three functions.  It is recorded
once to folded and once to SVG, and the SVG is opened in headless
Chromium (Debian's, driven by playwright-core through svg_check.js).
What a user would check: the tooltip of alpha_work names it and gives
the share the folded file gives; a click zooms it to the full width and
hides its siblings; a search reports the share of the matching frames,
counting nested matches once; reset brings the graph back.  The page may
fetch nothing: every request that is not for a file is aborted and
counted.
"""
import json
import os
import re
import subprocess

import pytest

from conftest import (INTERPRETERS, REPO, Profile, assert_recorded, find_interp,
                      fmt_frame, parse_frame, pct, run_pysight)

RATE = 200
SECONDS = 3.5
TOLERANCE = 5.0      # percentage points between two recordings of the workload
CHROMIUM = "/usr/bin/chromium"
NODE_MODULES = os.path.join(REPO, ".output", "node", "node_modules")
DRIVER = os.path.join(REPO, "tests", "integration", "svg_check.js")


def browse(procs, svg, hover, searches):
    assert os.access(CHROMIUM, os.X_OK), "%s is missing: run `make deps`" % CHROMIUM
    assert os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")), \
        "playwright-core is missing: `make integration` installs it"
    cfg = {"svg": svg, "hover": hover, "searches": searches, "node_modules": NODE_MODULES}
    proc = procs.start(["node", DRIVER, json.dumps(cfg)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the browser driver did not finish within 120 s")
    assert proc.returncode == 0, "svg_check.js exited %d:\n%s" % (proc.returncode, err)
    return json.loads(out)


def record(procs, interp, script, out):
    run = run_pysight(procs, ["record", "-o", out, "-r", RATE, "--"]
                      + interp.argv(script, SECONDS), timeout=90)
    assert_recorded(run)


def shown_pct(line):
    m = re.match(r"^([\d,]+) samples?, ([\d.]+)% of all$", line)
    assert m, "tooltip line %r does not read 'N samples, P% of all'" % line
    return int(m.group(1).replace(",", "")), float(m.group(2))


def by_label(boxes, prefix):
    return [b for b in boxes if b["label"].startswith(prefix)]


def test_flame_graph_in_browser(procs, staging, workdir):
    interp = find_interp("3.11", "debian") or INTERPRETERS[0]
    script = staging.script(interp, "ratio.py")
    folded = os.path.join(workdir, "ratio.folded")
    svg = os.path.join(workdir, "ratio.svg")
    record(procs, interp, script, folded)
    record(procs, interp, script, svg)
    prof = Profile.load(folded)
    beta = "Beta.beta_work" if interp.minor_tuple >= (3, 11) else "beta_work"

    seen = browse(procs, svg, "alpha_work (",
                  [r"^(alpha|gamma)_work ", r"ratio\.py", r"^main "])
    assert not seen["errors"], "errors in the page: %s" % seen["errors"]
    assert not seen["requests"], "the SVG tried to fetch: %s" % seen["requests"]
    assert "ratio.py" in seen["title"], "title without the command: %r" % seen["title"]
    assert "cpu mode" in seen["subtitle"] and "%d Hz" % RATE in seen["subtitle"], \
        "subtitle without mode and rate: %r" % seen["subtitle"]

    # Hover: the tooltip names the frame and gives its share, which is the
    # box's width and what the folded recording says of the same frame.
    target, span = seen["target"], seen["span"]
    tip = seen["tip"]
    assert tip["visible"] == "visible" and tip["lines"], "no tooltip on hover: %s" % tip
    assert tip["lines"][0] == target["label"], "tooltip names %r, the box is %r" % (
        tip["lines"][0], target["label"])
    samples, share = shown_pct(tip["lines"][1])
    assert abs(share - 100.0 * target["width"] / span) < 0.5, (
        "tooltip says %.2f%% but the box is %.1f of %.1f px" % (share, target["width"], span))
    frame = parse_frame(target["label"])
    want = pct(prof.select(lambda fr: frame in fr).total, prof.total)
    assert abs(share - want) <= TOLERANCE, (
        "%s: the SVG says %.2f%%, the folded recording %.2f%%\n%s"
        % (target["label"], share, want, prof.top()))
    assert share > 30, "alpha_work's hot line is about half the CPU, not %.2f%%" % share
    assert target["label"] in seen["details"], "details line: %r" % seen["details"]

    # Click: the box spans the width, its siblings are gone, its
    # ancestors span it too (faded), and reset is offered.
    zoomed = {b["i"]: b for b in seen["zoomed"]}
    z = zoomed[target["i"]]
    assert z["visible"] and abs(z["width"] - span) < 1.0, \
        "zoomed %s is %.1f px wide, not the full %.1f" % (z["label"], z["width"], span)
    siblings = [b for b in seen["zoomed"] if b["visible"] and b["y"] == target["y"]
                and b["i"] != target["i"]]
    assert not siblings, "boxes beside the zoomed one still shown: %s" % [
        (b["label"], b["width"]) for b in siblings]
    for name in (beta, "gamma_work"):
        shown = [b for b in by_label(seen["zoomed"], name + " (") if b["visible"]]
        assert not shown, "%s still drawn after zooming into alpha_work" % name
    below = [b for b in seen["zoomed"] if b["visible"] and b["y"] > target["y"]]
    assert below and all(abs(b["width"] - span) < 1.0 for b in below), \
        "the zoomed box's ancestors do not span the width"
    assert seen["reset_enabled"] == "button", "Reset zoom not enabled: %r" % seen["reset_enabled"]

    # Reset: every box back where it was.
    before = {b["i"]: b for b in seen["before"]}
    moved = [(b["label"], before[b["i"]]["width"], b["width"]) for b in seen["reset"]
             if abs(b["width"] - before[b["i"]]["width"]) > 0.01
             or b["visible"] != before[b["i"]]["visible"]]
    assert not moved, "reset left boxes changed: %s" % moved[:5]
    assert by_label(seen["reset"], beta + " ")[0]["visible"], "%s hidden after reset" % beta

    # Search: the share of the stacks with a match, each counted once.
    for s in seen["searches"]:
        regex = re.compile(s["regex"])
        m = re.match(r"^Matched: ([\d.]+)% \((\d+) frames\)$", s["matched"])
        assert m, "search %r shows %r" % (s["regex"], s["matched"])
        got = float(m.group(1))
        want = pct(prof.select(lambda fr: any(regex.search(fmt_frame(f)) for f in fr)).total,
                   prof.total)
        assert abs(got - want) <= TOLERANCE, "search %r: %.2f%% in the SVG, %.2f%% folded" % (
            s["regex"], got, want)
        assert s["labels"] and all(regex.search(t) for t in s["labels"]), \
            "highlighted boxes that do not match %r: %s" % (s["regex"], s["labels"][:5])
        assert not [t for t in s["unmatched"] if regex.search(t)], \
            "matching boxes left unhighlighted by %r" % s["regex"]
    nested = seen["searches"][1]
    assert float(re.search(r"([\d.]+)%", nested["matched"]).group(1)) <= 100.0, \
        "nested matches counted twice: %s" % nested["matched"]
    assert not [b for b in seen["cleared"] if b["match"]], "clear left highlights"

