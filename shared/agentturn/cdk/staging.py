"""How the bundler makes the trees it caches and the assets it stages, for both the dependency cache
(:mod:`agentturn.cdk.bundling`) and its byte-code copy (:mod:`agentturn.cdk.bytecode`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def link_or_copy(source: str, destination: str) -> None:
    """A hard link where the file system allows it, else a copy (``shutil.copytree``'s ``copy_function``).

    The cache and ``cdk.out`` are on the same file system in a checkout: hard links make the copy of a ~25 MB tree
    nearly free. Sharing inodes is safe because nothing rewrites a file once it is in a tree: an asset is never
    written once staged, and ``compileall`` writes new files beside the sources."""
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def build_once(final: Path, marker: str, build: Callable[[Path], str | None]) -> bool:
    """Make the directory ``final`` whole or not at all: ``build(directory)`` fills a directory that does not exist
    yet and returns what the file ``marker`` in it says (``None``: give up, nothing is published). It is built in a
    private directory beside ``final`` and renamed: a concurrent synth never sees half a tree, and of two that race,
    the first rename wins. Whether ``final`` was made (by this call or a concurrent winner)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    try:
        staged = scratch / "tree"
        content = build(staged)
        if content is None:
            return False
        (staged / marker).write_text(content)
        try:
            os.replace(staged, final)
        except OSError:
            if not (final / marker).exists():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return True
