"""The documentation runs as written (docs/architecture.md §runnable-docs).

- Every fenced block of README.md and docs/*.md marked ``<!-- runnable -->`` (the line right
  before its fence) is run: ```python blocks with this Python, ```sh blocks with bash, in
  one temporary directory per page, in the page's order (a page's blocks build on each
  other); ``qcoll`` (and ``build/tools/qcoll``) is the program under test, ``python3`` this
  Python. ``qcoll demo`` runs at small sizes. Options in the marker: ``torchrun=N`` (run
  the Python block under ``torchrun --standalone --nproc_per_node N``), ``expect="TEXT"``
  (the output must contain TEXT; may repeat).
- Every sample of ``qcoll demo``'s table in README.md and docs/ (a block with the column
  header line) is compared with the program's real output, numbers masked.

The program is $QCOLL_CLI, else $QCOLL_BUILD_DIR/tools/qcoll, else build/tools/qcoll; shell
blocks and the demo samples are skipped (with the reason) only when it is absent.
"""

import functools
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
if not (ROOT / "README.md").exists():  # a copy of the tests outside the repository (scripts/test-wheel.sh)
    pytest.skip("the docs checks read the repository's pages: run them from python/tests", allow_module_level=True)
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
DOC = ROOT / "docs" / "python.md"

MARKER = re.compile(r"^<!--\s*runnable\b(?P<opts>[^>]*?)-->\s*$")
FENCE = re.compile(r"^```(?P<lang>\w*)\s*$")
# The small sizes for `qcoll demo` (a multiple of every rank count; the least H).
DEMO_SMALL = {"--bs": "64", "--hidden": "1024", "--reps": "1"}


class Block:
    def __init__(self, page: pathlib.Path, line: int, lang: str, code: str, opts: str):
        self.page, self.line, self.lang, self.code = page, line, lang, code
        m = re.search(r"torchrun=(\d+)", opts)
        self.torchrun = int(m.group(1)) if m else 0
        self.expect = re.findall(r'expect="([^"]*)"', opts)
        unknown = re.sub(r'torchrun=\d+|expect="[^"]*"', "", opts).strip()
        assert not unknown, f"{self.where}: unknown runnable option {unknown!r}"

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: pathlib.Path):
    """(first line number, lang, code, marker options or None) of every fenced block."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group("lang")
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        mark = MARKER.match(lines[start - 1]) if start > 0 else None
        yield start + 1, lang, "\n".join(lines[start + 1:j]) + "\n", (mark.group("opts") if mark else None)
        i = j + 1


def runnable_blocks(page: pathlib.Path) -> list:
    out = []
    for line, lang, code, opts in fenced_blocks(page):
        if opts is None:
            continue
        assert lang in ("python", "sh"), f"{page.name}:{line}: a runnable block must be ```python or ```sh"
        out.append(Block(page, line, lang, code, opts))
    return out


def test_markers_stand_before_a_fence():
    """A marker that is not right before a fence would silently run nothing."""
    for page in PAGES:
        lines = page.read_text().splitlines()
        for k, text in enumerate(lines):
            if MARKER.match(text):
                assert k + 1 < len(lines) and FENCE.match(lines[k + 1]), \
                    f"{page.relative_to(ROOT)}:{k + 1}: <!-- runnable --> must be the line right before a ``` fence"


def program() -> pathlib.Path | None:
    """$QCOLL_CLI, else $QCOLL_BUILD_DIR/tools/qcoll, else build/tools/qcoll; None if absent."""
    build = pathlib.Path(os.environ.get("QCOLL_BUILD_DIR") or ROOT / "build")
    p = pathlib.Path(os.environ.get("QCOLL_CLI") or build / "tools" / "qcoll")
    if not p.is_absolute():
        p = ROOT / p
    return p if p.is_file() and os.access(p, os.X_OK) else None


def small_demo(code: str) -> str:
    """`qcoll demo ...` lines at DEMO_SMALL's sizes (given values replaced, missing ones added)."""
    def fix(line: str) -> str:
        if not re.match(r"\s*(\S*/)?qcoll demo\b", line):
            return line
        cmd, sep, comment = line.partition("#")
        for opt, value in DEMO_SMALL.items():
            cmd, n = re.subn(rf"{opt}[ =]\S+", f"{opt} {value}", cmd)
            if n == 0:
                cmd = cmd.rstrip() + f" {opt} {value} "
        return cmd + sep + comment
    return "\n".join(fix(line) for line in code.splitlines()) + "\n"


def run_block(block: Block, cwd: pathlib.Path, tools: pathlib.Path) -> str:
    # PYTHONFAULTHANDLER: a block that aborts (a rank under torchrun, at exit) shows every
    # thread's Python stack in the output of the failure.
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONFAULTHANDLER="1")
    if block.lang == "python":
        script = cwd / f"block{block.line}.py"
        script.write_text(block.code)
        if block.torchrun:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={block.torchrun}", str(script)]
        else:
            cmd = [sys.executable, str(script)]
    else:
        exe = program()
        code = small_demo(block.code).replace("build/tools/qcoll", str(exe))
        script = cwd / f"block{block.line}.sh"
        script.write_text(code)
        cmd = ["bash", "-e", "-o", "pipefail", str(script)]
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{block.where} failed (exit {r.returncode}):\n{block.code}\n---\n{out[-8000:]}"
    for text in block.expect:
        assert text in out, f"{block.where}: the output lacks {text!r}:\n{out[-4000:]}"
    return out


def make_tools(tmp: pathlib.Path) -> pathlib.Path:
    tools = tmp / "bin"
    tools.mkdir()
    for name in ("python3", "python"):
        (tools / name).symlink_to(sys.executable)
    exe = program()
    if exe is not None:
        (tools / "qcoll").symlink_to(exe)
    return tools


RUNNABLE_PAGES = [p for p in PAGES if runnable_blocks(p)]


def test_the_pages_have_runnable_blocks():
    """The marker is in use where a newcomer starts (so that a broken parser cannot pass)."""
    names = {p.name for p in RUNNABLE_PAGES}
    assert {"README.md", "python.md", "cli.md"} <= names, names


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=[p.name for p in RUNNABLE_PAGES])
def test_runnable_blocks_run_as_written(page, tmp_path):
    tools = make_tools(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    skipped = []
    for block in runnable_blocks(page):
        if block.lang == "sh" and program() is None:
            skipped.append(f"{block.where} (the qcoll program is not built: set QCOLL_CLI or QCOLL_BUILD_DIR, or build build/tools/qcoll)")
        elif (block.torchrun or re.search(r"^import torch|^from torch|qcoll\.torch", block.code, re.M)) \
                and importlib.util.find_spec("torch") is None:
            skipped.append(f"{block.where} (torch is not installed)")
        else:
            run_block(block, work, tools)
    if skipped:
        pytest.skip("skipped " + "; ".join(skipped))


def test_example_is_ten_lines_and_runs():
    """docs/python.md's first Python block (README's too) is the ten-line example, marked
    runnable and expected to print the result's shape (run above with the page)."""
    blocks = [b for b in fenced_blocks(DOC) if b[1] == "python"]
    assert blocks, "no ```python block in docs/python.md"
    line, _, code, opts = blocks[0]
    assert len(code.strip().splitlines()) <= 10
    assert opts is not None and 'expect="(2, 1024)"' in opts, "docs/python.md's example must stay runnable"
    readme = [b for b in fenced_blocks(ROOT / "README.md") if b[1] == "python"]
    assert readme and readme[0][2] == code, "README.md's Python example differs from docs/python.md's"


# ---- the demo's sample output ------------------------------------------------------------

HEADER = re.compile(r"^\s*mode\s+x \+ scales\s+sent/rank")


def indented_and_fenced_blocks(page: pathlib.Path):
    """(first line number, lines) of every code block, indented (4 spaces) or fenced."""
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield i + 2, lines[i + 1:j]
            i = j + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            yield i + 1, [text[4:] for text in lines[i:j]]
            i = j
        else:
            i += 1


def normalized(text: str) -> str:
    """A line with what varies from run to run masked: numbers, the kernel and quantizer targets."""
    text = re.sub(r"\(kernel [^,()]+, quantizer [^,()]+,", "(kernel K, quantizer Q,", text)
    text = re.sub(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", "N", text)
    return " ".join(text.split())


def demo_samples():
    for page in PAGES:
        for line, block in indented_and_fenced_blocks(page):
            if any(HEADER.match(t) for t in block):
                yield page, line, [t for t in block if t.strip()]


@functools.lru_cache(maxsize=None)
def demo_output(exe: str) -> tuple:
    args = [exe, "demo"] + [a for kv in DEMO_SMALL.items() for a in kv]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return tuple(normalized(t) for t in r.stdout.splitlines() if t.strip())


def test_demo_samples_exist():
    pages = {p.name for p, _, _ in demo_samples()}
    assert {"README.md", "cli.md"} <= pages, pages


@pytest.mark.parametrize("page,line,sample", list(demo_samples()),
                         ids=[f"{p.name}:{n}" for p, n, _ in demo_samples()])
def test_demo_sample_matches_the_program(page, line, sample):
    exe = program()
    if exe is None:
        pytest.skip("the qcoll program is not built (set QCOLL_CLI or QCOLL_BUILD_DIR, or build build/tools/qcoll)")
    real = demo_output(str(exe))
    want = [normalized(t) for t in sample]
    assert want[0] in real, f"{page.name}:{line}: {sample[0]!r} is not a line qcoll demo prints:\n" + "\n".join(real)
    at = real.index(want[0])
    got = list(real[at:at + len(want)])
    for k, (w, g) in enumerate(zip(want, got + [""] * len(want))):
        assert w == g, (f"{page.name}:{line + k}: the sample differs from qcoll demo's output "
                        f"(numbers masked):\n  docs:    {w}\n  program: {g}")
