"""Tables as the reports print them: Markdown, and aligned text for the
terminal."""


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def text(header, rows, left=()):
    """Columns padded to their widest cell; those in @left (indices) are
    left-aligned, numbers right-aligned."""
    widths = [max(len(r[i]) for r in [header] + rows)
              for i in range(len(header))]
    lines = []
    for r in [header] + rows:
        cells = [c.ljust(w) if i in left else c.rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return lines
