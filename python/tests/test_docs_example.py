"""The Python example of docs/python.md (also README.md's) runs as written."""

import pathlib
import re
import subprocess
import sys

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"


def first_python_block(text: str) -> str:
    m = re.search(r"```python\n(.*?)```", text, re.S)
    assert m, "no ```python block in docs/python.md"
    return m.group(1)


def test_example_is_ten_lines_and_runs(tmp_path):
    code = first_python_block(DOC.read_text())
    assert len(code.strip().splitlines()) <= 10
    script = tmp_path / "example.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "(2, 1024)" in r.stdout
