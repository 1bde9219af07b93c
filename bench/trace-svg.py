#!/usr/bin/env python3
"""Draw a SHARDPIPE_TRACE file as an SVG timeline, and say how much its
batches overlap (doc/design.md §23).

    trace-svg.py TRACE.json OUT.svg [--stream N] [--from MS] [--to MS]

One row per track (the caller, pipeline and writer threads, the device's
upload, compute and download queues) of each stream; spans nested on a
track (submit > scatter) are drawn as thinner bars inside their parent.
Each span is labelled with its batch (or shard epoch) where it is wide
enough.  Only the standard library is used.
"""
import argparse
import html
import json
import sys

COLOURS = {
    "stage": "#9e9e9e", "wait": "#e0e0e0",
    "submit": "#bbdefb", "scatter": "#64b5f6", "compress": "#1e88e5",
    "aggregate": "#0d47a1", "fetch": "#ffe0b2", "shard index": "#fb8c00",
    "run batch": "#90caf9",
    "shard write": "#a5d6a7", "zarr.json": "#2e7d32",
    "upload": "#ce93d8", "download offsets": "#ffcc80",
    "download chunks": "#ef6c00", "trace write": "#f44336",
}
KERNEL = "#7e57c2"      # every sp_* kernel
ROW, PAD, LEFT, TOP = 22, 4, 190, 30


def colour(name):
    return COLOURS.get(name, KERNEL if name.startswith("sp_") else "#607d8b")


def load(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    procs, threads, spans = {}, {}, []
    for e in events:
        if e.get("ph") == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            args = e.get("args", {})
            unit = "batch" if "batch" in args else "shard epoch"
            spans.append((e["pid"], e["tid"], e["name"], e["ts"],
                          e["ts"] + e["dur"], args.get(unit), unit))
    return procs, threads, spans


def overlap(spans, pid):
    """Batches k whose successor's upload starts before k is fetched."""
    up, done = {}, {}
    for p, _, name, t0, t1, n, unit in spans:
        if p != pid or unit != "batch":
            continue
        if name == "upload":
            up[n] = t0
        if name in ("fetch", "download chunks"):
            done[n] = max(done.get(n, t1), t1)
    pairs = [k for k in sorted(done) if k + 1 in up]
    return sum(up[k + 1] < done[k] for k in pairs), len(pairs)


def depths(track_spans):
    """Nesting level of each span on one track (0: outermost)."""
    out, open_ends = [], []
    for s in sorted(track_spans, key=lambda s: (s[3], -s[4])):
        while open_ends and open_ends[-1] <= s[3]:
            open_ends.pop()
        out.append((s, len(open_ends)))
        open_ends.append(s[4])
    return out


def draw(procs, threads, spans, t_from, t_to, width):
    rows = sorted({(p, t) for p, t, *_ in spans})
    scale = (width - LEFT - 10) / max(t_to - t_from, 1e-9)
    height = TOP + len(rows) * ROW + 60
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="10">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>']
    # time axis, in milliseconds: a 1, 2 or 5 step giving 5 to 12 ticks
    span_ms, i = (t_to - t_from) / 1000, 0
    step = 0.001
    while span_ms / step > 12:
        i += 1
        step = (1, 2, 5)[i % 3] * 10.0 ** (i // 3 - 3)
    ms = (t_from / 1000 // step + 1) * step
    while ms * 1000 < t_to:
        x = LEFT + (ms * 1000 - t_from) * scale
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                   % (x, TOP - 5, x, TOP + len(rows) * ROW))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g ms</text>'
                   % (x, TOP - 8, round(ms, 3)))
        ms += step
    for i, (p, t) in enumerate(rows):
        y = TOP + i * ROW
        label = "%s" % threads.get((p, t), "track %d" % t)
        if len(procs) > 1:
            label = "%d: %s" % (p, label)
        out.append('<text x="4" y="%d">%s</text>'
                   % (y + ROW / 2 + 3, html.escape(label)))
        mine = [s for s in spans if s[0] == p and s[1] == t and
                s[4] >= t_from and s[3] <= t_to]
        for s, d in depths(mine):
            x0 = LEFT + (max(s[3], t_from) - t_from) * scale
            x1 = LEFT + (min(s[4], t_to) - t_from) * scale
            h = ROW - 2 * PAD - 4 * d
            if h < 4:
                h = 4
            yy = y + PAD + (ROW - 2 * PAD - h)
            w = max(x1 - x0, 0.5)
            tip = "%s %s %s: %.3f ms" % (s[2], s[6], s[5], (s[4] - s[3]) / 1e3)
            out.append('<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" '
                       'fill="%s" stroke="white" stroke-width="0.3">'
                       '<title>%s</title></rect>'
                       % (x0, yy, w, h, colour(s[2]), html.escape(tip)))
            if w > 14 and d == 0 and s[5] is not None:
                out.append('<text x="%.1f" y="%.1f" font-size="8" '
                           'fill="black">%s</text>'
                           % (x0 + 2, yy + h - 3, s[5]))
    # legend
    names = sorted({s[2] for s in spans}, key=lambda n: (n.startswith("sp_"), n))
    x, y = 4, TOP + len(rows) * ROW + 18
    for n in names:
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>'
                   % (x, y - 9, colour(n), x + 13, y, html.escape(n)))
        x += 20 + 6 * len(n)
        if x > width - 120:
            x, y = 4, y + 16
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("svg", nargs="?")
    ap.add_argument("--stream", type=int, help="only this stream (pid)")
    ap.add_argument("--from", dest="t_from", type=float, help="ms")
    ap.add_argument("--to", dest="t_to", type=float, help="ms")
    ap.add_argument("--width", type=int, default=1200)
    a = ap.parse_args()
    procs, threads, spans = load(a.trace)
    for pid in sorted(procs):
        got, pairs = overlap(spans, pid)
        if pairs:
            print("stream %d (%s): batch k+1's upload started before batch "
                  "k's fetch ended for %d of %d batches (%.0f%%)"
                  % (pid, procs[pid], got, pairs, 100.0 * got / pairs))
        else:
            print("stream %d (%s): no uploads (not a kernel backend)"
                  % (pid, procs[pid]))
    if a.svg is None:
        return 0
    if a.stream is not None:
        spans = [s for s in spans if s[0] == a.stream]
        procs = {a.stream: procs.get(a.stream, "")}
    if not spans:
        sys.exit("trace-svg: no spans to draw")
    t_from = a.t_from * 1000 if a.t_from is not None else min(s[3] for s in spans)
    t_to = a.t_to * 1000 if a.t_to is not None else max(s[4] for s in spans)
    with open(a.svg, "w") as f:
        f.write(draw(procs, threads, spans, t_from, t_to, a.width))
    return 0


if __name__ == "__main__":
    sys.exit(main())
