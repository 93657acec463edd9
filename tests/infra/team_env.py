"""A team's own Python environment for the team-project tests, made from the interpreter that runs the tests.

The environment has none of the packages of its own (agentturn arrives in it as a wheel, the team's project
editable), and sees the packages of the *test* interpreter — the machine's, or those of the virtual environment
the tests run in — so nothing is downloaded. ``venv``'s ``system_site_packages`` would show the packages of the
*base* interpreter instead: inside a fresh virtual environment those are not the ones the tests were installed
with (on Debian, a setuptools too old to build without ``wheel``, and no pytest), which is how the team-project
test failed there while it passed outside one.

Standard library only: a test runs this module from inside another interpreter.
"""

from __future__ import annotations

import site
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Final

#: The file that lists the test interpreter's package folders in the team's environment.
PATHS_FILE: Final = "_agentturn_test_interpreter.pth"


def package_folders() -> list[str]:
    """The folders this interpreter imports installed packages from (its venv's, its base's, the user's), in
    its own order. ``.pth`` files in them are not run in the team's environment: an editable install of this
    checkout, for one, must not shadow the wheel the team installs."""
    candidates = [*sys.path, *site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    folders: list[str] = []
    for entry in candidates:
        path = Path(entry)
        if path.name in ("site-packages", "dist-packages") and path.is_dir() and str(path) not in folders:
            folders.append(str(path))
    return folders


def create(environment: Path) -> Path:
    """A virtual environment at ``environment`` that sees this interpreter's packages; returns its python."""
    venv.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(environment)
    python = environment / "bin" / "python"
    purelib = Path(
        sysconfig.get_path("purelib", vars={"base": str(environment), "platbase": str(environment)}, scheme="venv")
        if "venv" in sysconfig.get_scheme_names()
        else environment / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )
    purelib.mkdir(parents=True, exist_ok=True)
    # Plain lines (no `import`): appended to sys.path after the environment's own site-packages, so what the team
    # installs there wins over anything of the same name here.
    (purelib / PATHS_FILE).write_text("".join(f"{folder}\n" for folder in package_folders()), encoding="utf-8")
    return python


if __name__ == "__main__":
    print(create(Path(sys.argv[1])))
