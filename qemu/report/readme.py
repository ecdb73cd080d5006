"""README's tables from real runs: each region between
"<!-- make readme: NAME -->" and "<!-- end make readme -->" is replaced by
what the last run wrote, never typed by hand."""

import os
import re
import shutil
import sys

REGION = re.compile(r"(<!-- make readme: ([a-z]+) -->\n).*?"
                    r"(<!-- end make readme -->)", re.S)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        sys.exit(f"report readme: {path} missing: run the make target that "
                 "writes it")


def update(readme_path, demo_dir, bench_dir):
    report = os.path.join(demo_dir, "report")
    sources = {
        # The text tables as make demo prints them, indented as code.
        "containers": lambda: "".join(
            ("    " + line if line else "") + "\n"
            for line in read(os.path.join(report, "report.txt"))
            .rstrip("\n").split("\n")),
        "lockup": lambda: read(os.path.join(report, "lockup.md")),
        "bench": lambda: read(os.path.join(bench_dir, "bench.md")),
    }
    text = read(readme_path)
    seen = []

    def fill(m):
        name = m.group(2)
        if name not in sources:
            sys.exit(f"report readme: unknown region {name}; the regions "
                     f"are: {', '.join(sources)}")
        seen.append(name)
        return f"{m.group(1)}\n{sources[name]().rstrip()}\n\n{m.group(3)}"

    text = REGION.sub(fill, text)
    missing = set(sources) - set(seen)
    if missing:
        sys.exit(f"report readme: {readme_path} has no region "
                 f"{', '.join(sorted(missing))}")
    with open(readme_path, "w", encoding="utf-8") as f:
        f.write(text)
    top = os.path.dirname(os.path.abspath(readme_path))
    shutil.copy(os.path.join(report, "latency.png"),
                os.path.join(top, "Documentation", "containers-latency.png"))
    print(f"readme: {readme_path}: {', '.join(seen)} from {report} and "
          f"{bench_dir}; Documentation/containers-latency.png")
    return 0
