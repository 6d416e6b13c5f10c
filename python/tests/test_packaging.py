"""`pip install ./python` works without Node: the wheel carries the assembled library and the
PEP 561 marker, and nothing outside the package."""
import subprocess
import sys
import zipfile
from pathlib import Path

PKG = Path(__file__).resolve().parents[1]


def test_wheel_ships_the_library_and_py_typed(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(PKG), "-w", str(tmp_path)],
                   check=True, capture_output=True)
    [wheel] = list(tmp_path.glob("echomq-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "echomq/library.json" in names and "echomq/py.typed" in names
    assert all(n.startswith(("echomq/", "echomq-")) for n in names)
    lib = zipfile.ZipFile(wheel).read("echomq/library.json")
    assert lib == (PKG / "echomq" / "library.json").read_bytes()
