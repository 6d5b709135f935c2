"""pyproject.toml lists every package of the product's source tree: ``[tool.setuptools] packages`` is written by
hand (``templates/`` ships under another name), so a new package left out would be missing from the wheel."""

from __future__ import annotations

import tomllib

from tests.packaging.installed_product import REPOSITORY, source_packages


def test_every_package_of_the_source_tree_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = sorted(source_packages() - listed)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"
    assert listed <= source_packages(), f"listed but not in the source tree: {sorted(listed - source_packages())}"
