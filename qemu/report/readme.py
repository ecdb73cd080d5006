"""The tables of README.md and Documentation/ from real runs: each region
between "<!-- make readme: NAME -->" and "<!-- end make readme -->" is
replaced by what the last run wrote, never typed by hand.  A region whose
run is missing is left as it is and said; the others are still written."""

import os
import re
import shutil

import tables

REGION = re.compile(r"(<!-- make readme: ([a-z]+) -->\n).*?"
                    r"(<!-- end make readme -->)", re.S)

# The files with regions, and the regions each must have.
FILES = {
    "README.md": ("containers", "lockup", "ordinary", "bench", "timings"),
    os.path.join("Documentation", "containers.md"): (
        "stressng", "kills", "daemons", "choosing", "leftovers"),
}

# The tests whose leftovers.tsv feed the "leftovers" region.
LEFTOVER_TESTS = ("test_runtime_matrix", "test_podman")


# test_runtime_matrix's words for what is left; test_podman's are paths.
LEFT_WORDS = {
    "cgroup": "the container's cgroup",
    "state": "the runtime's state",
    "scope": "the container's systemd scope",
}


class Missing(Exception):
    """A run that a region needs has not been made."""


def read(path, target):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError as e:
        raise Missing(f"{path} missing: run {target}") from e


def leftovers(check_dir):
    """What a start that failed on a bad value left behind, by tool and
    cgroup manager, from the rows test_runtime_matrix and test_podman
    recorded (TOOL, MANAGER, VALUE, LEFT)."""
    target = f'make check TESTS="{" ".join(LEFTOVER_TESTS)}"'
    left = {}
    for test in LEFTOVER_TESTS:
        path = os.path.join(check_dir, "results", test, "leftovers.tsv")
        for line in read(path, target).splitlines():
            tool, manager, value, what = line.split("\t")
            left.setdefault((tool, manager), {})[value] = what
    rows = []
    for (tool, manager), by_value in left.items():
        # One row when every bad value left the same, else one a value.
        if len(set(by_value.values())) == 1:
            rows.append([tool, manager, ", ".join(f"`{v}`" for v in by_value),
                         next(iter(by_value.values()))])
        else:
            rows += [[tool, manager, f"`{v}`", w] for v, w in by_value.items()]
    for r in rows:
        if r[3] != "nothing":
            r[3] = ", ".join(LEFT_WORDS.get(w, f"`{w}`") for w in r[3].split())
    return "\n".join(tables.markdown(
        ["runtime", "cgroup manager", "bad value", "left after the failed start"],
        rows)) + "\n"


def fill(path, sources):
    """@path's text with its regions filled, the regions written, and
    what kept the others as they were."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, written, kept = [], [], []

    def one(m):
        name = m.group(2)
        if name not in sources:
            raise Missing(f"unknown region {name}; the regions are: "
                          f"{', '.join(sources)}")
        seen.append(name)
        try:
            body = sources[name]().rstrip()
        except Missing as e:
            kept.append(f"{name} ({e})")
            return m.group(0)
        written.append(name)
        return f"{m.group(1)}\n{body}\n\n{m.group(3)}"

    text = REGION.sub(one, text)
    missing = set(sources) - set(seen)
    if missing:
        raise Missing(f"no region {', '.join(sorted(missing))}")
    return text, written, kept


def update(top, demo_dir, bench_dir, check_dir):
    report = os.path.join(demo_dir, "report")
    sources = {
        # The text tables as make demo prints them, indented as code.
        "containers": lambda: "".join(
            ("    " + line if line else "") + "\n"
            for line in read(os.path.join(report, "report.txt"), "make demo")
            .rstrip("\n").split("\n")),
        "lockup": lambda: read(os.path.join(report, "lockup.md"), "make demo"),
        "ordinary": lambda: read(os.path.join(report, "ordinary-oom.md"),
                                 "make demo"),
        "stressng": lambda: read(os.path.join(report, "stress-ng.md"),
                                 "make demo"),
        "kills": lambda: read(os.path.join(report, "kills.md"), "make demo"),
        "daemons": lambda: read(os.path.join(report, "daemons.md"),
                                "make demo"),
        "choosing": lambda: read(os.path.join(report, "choosing.md"),
                                 "make demo"),
        "bench": lambda: read(os.path.join(bench_dir, "bench.md"),
                              "make bench"),
        "leftovers": lambda: leftovers(check_dir),
        "timings": lambda: read(os.path.join(check_dir, "timings.md"),
                                "make check"),
    }
    png = os.path.join(report, "latency.png")
    failed = False
    for name, regions in FILES.items():
        path = os.path.join(top, name)
        try:
            text, written, kept = fill(path, {r: sources[r] for r in regions})
        except Missing as e:
            print(f"readme: {name} left as it is: {e}")
            failed = True
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"readme: {name}: {', '.join(written) or 'nothing written'}")
        for k in kept:
            print(f"readme: {name}: left as it was: {k}")
            failed = True
        # README's latency figure comes from the same make demo as its
        # containers table.
        if name == "README.md" and "containers" in written:
            if not os.path.exists(png):
                print(f"readme: {png} missing: run make demo")
                failed = True
                continue
            shutil.copy(png, os.path.join(top, "Documentation",
                                          "containers-latency.png"))
            print("readme: Documentation/containers-latency.png")
    return 1 if failed else 0
