"""What the distribution promises: one version everywhere, typed packages, install hints naming our distribution."""
import importlib
import importlib.metadata
import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("graph", "exec", "grad", "dist", "transpile")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NAME = PYPROJECT["project"]["name"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_has_the_one_version(package):
    from graph._version import __version__
    assert importlib.import_module(package).__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__)


def test_the_installed_metadata_has_the_same_version():
    from graph._version import __version__
    try:
        installed = importlib.metadata.version(NAME)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{NAME} is not installed (the tests run from a checkout)")
    assert installed == __version__


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_is_marked_typed(package):
    assert (ROOT / package / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["*"]


def test_install_hints_name_our_distribution():
    hint = re.compile(r"pip install '?([\w.-]+)\[")
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for name in hint.findall(path.read_text()):
                assert name == NAME, f"{path.relative_to(ROOT)}: `pip install {name}[...]` installs another project"
