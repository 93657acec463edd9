"""``agentturn init DIR``: a project a team owns — its agents, tools, tests and CDK app — on agentturn's public API.

The files come from ``agentturn/templates/project/`` (``*.tmpl``, so that no tool mistakes them for this
package's own code). Placeholders are plain tokens replaced everywhere, file names included:

=========================  ====================================================================
``__project__``            the project's name (the folder's name unless ``--name`` says otherwise)
``__package__``            its Python package: the name in lower case, ``_`` for anything else
``__stack__``              the CloudFormation stack name: the name in CamelCase
``__agentturn_version__``  ``>=`` the installed agentturn version
``__cdk_cli_version__``    the CDK CLI this agentturn's ``aws-cdk-lib`` needs (as pinned here)
``__next_steps__``         :func:`next_steps`, one command a line
=========================  ====================================================================

:func:`next_steps` is what ``agentturn init`` prints, what the project's README says and what this
repository's README shows (a test keeps the three equal): it runs in the environment agentturn is installed
in, because agentturn is not on a package index — a new environment could not install the project.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Final

TEMPLATE_DIR: Final = Path(__file__).resolve().parent.parent / "templates" / "project"
TEMPLATE_SUFFIX: Final = ".tmpl"
#: The CDK CLI that reads the cloud assemblies of the aws-cdk-lib the ``cdk`` extra pins (this repository's
#: package.json pins the same version; a test keeps them equal).
CDK_CLI_VERSION: Final = "2.1148.1"
#: Template files whose name starts with a dot once written (a dot file would be skipped by packaging).
_DOT_FILES: Final = frozenset({"gitignore"})


class ScaffoldError(ValueError):
    """The project cannot be written there (the folder is not empty, or the name makes no package)."""


@dataclass(frozen=True)
class ProjectNames:
    project: str
    package: str
    stack: str

    @classmethod
    def from_name(cls, name: str) -> ProjectNames:
        words = [word for word in re.split(r"[^A-Za-z0-9]+", name) if word]
        if not words or not words[0][0].isalpha():
            raise ScaffoldError(f"{name!r} must start with a letter to name a Python package and a stack")
        package = "_".join(word.lower() for word in words)
        if keyword.iskeyword(package) or package in ("agentturn", "tests", "test"):
            raise ScaffoldError(f"{name!r} would make the package {package!r}, which clashes; choose another --name")
        stack = "".join(word[:1].upper() + word[1:] for word in words)[:128]
        return cls(project="-".join(word.lower() for word in words), package=package, stack=stack)


def _agentturn_version() -> str:
    try:
        return metadata.version("agentturn")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0.1.0"


def render(text: str, names: ProjectNames) -> str:
    replacements = {
        "__project__": names.project,
        "__package__": names.package,
        "__stack__": names.stack,
        "__agentturn_version__": f">={_agentturn_version()}",
        "__cdk_cli_version__": CDK_CLI_VERSION,
        "__next_steps__": "\n".join(next_steps(names)),
    }
    for token, value in replacements.items():
        text = text.replace(token, value)
    return text


def next_steps(names: ProjectNames) -> list[str]:
    """The commands that take a new project to its tests, the console and a template, run from its folder in
    the Python environment that has agentturn (``agentturn[cdk,local]``) installed."""
    return [
        "python3 -m pip install -e '.[dev]' && npm install",
        "python3 -m pytest",
        f"agentturn dev --agents {names.package}.agents:build --code {names.package}",
        "npx cdk synth",
    ]


def _target_name(relative: Path, names: ProjectNames) -> Path:
    parts = [render(part, names) for part in relative.parts]
    last = parts[-1].removesuffix(TEMPLATE_SUFFIX)
    parts[-1] = f".{last}" if last in _DOT_FILES else last
    return Path(*parts)


def init_project(directory: Path, *, name: str | None = None) -> list[Path]:
    """Write the project into ``directory`` (created; it must not hold anything yet); returns the files."""
    names = ProjectNames.from_name(name or directory.resolve().name)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ScaffoldError(f"{directory} already exists and is not an empty folder: nothing was written")
    templates = sorted(path for path in TEMPLATE_DIR.rglob(f"*{TEMPLATE_SUFFIX}") if path.is_file())
    if not templates:
        raise ScaffoldError(f"no templates under {TEMPLATE_DIR}: the agentturn installation is incomplete")
    written: list[Path] = []
    for template in templates:
        target = directory / _target_name(template.relative_to(TEMPLATE_DIR), names)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(template.read_text(encoding="utf-8"), names), encoding="utf-8")
        written.append(target)
    return written
