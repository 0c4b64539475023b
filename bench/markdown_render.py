"""What server-side highlighting and math cost a chat reply's render (``POST /api/render/markdown``).

Renders the same replies three ways in one process and prints the median time of each next to the plain
markdown baseline of the same text: prose only; prose with a 40-line Python block (Pygments); prose with
twelve formulas (latex2mathml). A streamed reply is rendered at most four times a second plus once at the
end, so the per-render time is what a streaming reader costs the server. Also prints the bytes a client
would need instead for client-side math (KaTeX, measured separately with ``npm pack``; see
docs/benchmarks.md).

    python -m bench.markdown_render [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from agentloft.web.markdown import render

PROSE = "\n\n".join(
    f"Paragraph {i}: the **model** answers with `inline code`, a [link](https://example.com) and a list:\n\n"
    "- one\n- two\n- three" for i in range(6)
)
CODE = "```python\n" + "".join(f"def f{i}(x: int) -> int:\n    return x * {i}  # step {i}\n" for i in range(20)) + "```"
PLAIN_CODE = "```\n" + "".join(f"def f{i}(x: int) -> int:\n    return x * {i}  # step {i}\n" for i in range(20)) + "```"
FORMULAS = " ".join(
    rf"Term {i}: $\frac{{a_{i}}}{{b_{i}}} + \sqrt{{x^{i}}}$ and $$\int_0^{i} t^2\,dt = \frac{{{i}^3}}{{3}}$$."
    for i in range(6)
)
PLAIN_FORMULAS = FORMULAS.replace("$", "")


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    render(PROSE + CODE + FORMULAS)  # warm the parser, lexer and converter
    cases = [
        ("prose (baseline)", PROSE, PROSE),
        ("prose + 40-line Python block", PROSE + "\n\n" + CODE, PROSE + "\n\n" + PLAIN_CODE),
        ("prose + 12 formulas", PROSE + "\n\n" + FORMULAS, PROSE + "\n\n" + PLAIN_FORMULAS),
    ]
    print(f"{'reply':32} {'render ms':>10} {'same text without it':>22} {'ratio':>7}  ({runs} runs, median)")
    for name, text, baseline in cases:
        with_it = median_ms(lambda t=text: render(t), runs)
        without = median_ms(lambda t=baseline: render(t), runs)
        print(f"{name:32} {with_it:10.2f} {without:22.2f} {with_it / without:7.2f}")


if __name__ == "__main__":
    main()
