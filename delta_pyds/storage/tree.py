"""Recursive listing of a table's directory tree, with what each entry is on local disk.

Guarantees:

* :func:`list_tree` lists every file below the root (or below one of its directories). On
  object stores it is the plain recursive listing (objects are never links). On local disk
  it follows symbolic links to directories *inside* the root (as delta-spark's and Spark's
  Hadoop listings follow links), under each name that reaches them (a link to one of its
  own ancestors, a loop, is not followed; one directory is listed at most
  :data:`MAX_NAMES` times), and never descends into a link whose target is outside the
  root: such a link, a link to a file and a dangling link are listed as links (kind
  ``dirlink`` or ``link``), never looked through; a directory to list that is itself
  outside the root lists as empty;
* each local entry carries the *real* path of what it names (``real``) and the real
  location of the name itself (``name_real``: the real parent directory plus the base
  name), so callers decide on what a path leads to, not on how it is spelled;
  :func:`links_traversed` gives the links a path goes through when it is resolved
  (:func:`resolve_all` for many paths, each directory resolved once);
* :func:`visible_files` is what Spark's Parquet listing reads (no ``_``/``.`` component);
* :func:`escapes_root` says whether writing or deleting a path would follow a link out of
  the root (always False on object stores).
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass

from delta_pyds.storage.store import Storage, mtime_ms

FILE = "file"
LINK = "link"  # a symbolic link to a file, a dangling one, or one in a loop
DIR_LINK = "dirlink"  # a symbolic link to a directory
MAX_LINKS = 40  # links followed while resolving one path (the kernel's ELOOP bound)
MAX_NAMES = 16  # times one real directory is listed (under different names through links)


@dataclass(frozen=True)
class TreeEntry:
    rel: str  # root-relative, as listed (through the names of followed directory links)
    path: str  # the listed path (what fsspec calls it; absolute on local disk)
    kind: str  # FILE, LINK or DIR_LINK
    size: int
    modification_time: int  # ms; a link's own (lstat) time
    real: str | None = None  # local: the resolved real path of what the entry leads to
    name_real: str | None = None  # local: real parent directory + base name (what unlink removes)


def is_within(path: str, directory: str) -> bool:
    """Whether the (real, absolute) ``path`` is ``directory`` or below it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def is_hidden(rel: str) -> bool:
    """Whether Spark's file listing skips ``rel``: a component starting with ``_`` or ``.``."""
    return any(p.startswith(("_", ".")) for p in rel.split("/"))


def visible_files(storage: Storage) -> list[TreeEntry]:
    """The entries below the root that Spark's Parquet listing would read (no hidden name)."""
    return [e for e in list_tree(storage) if not is_hidden(e.rel)]


def real_root(storage: Storage) -> str:
    return os.path.realpath(storage.root)


def list_tree(storage: Storage, under: str = "") -> list[TreeEntry]:
    """Every file below ``storage.join(under)`` (see the module docstring), sorted by ``rel``."""
    base = storage.join(under) if under else storage.root
    prefix = under.strip("/") + "/" if under.strip("/") else ""
    if storage.protocol == "file":
        return _walk_local(real_root(storage), base, prefix)
    fs = storage.fs
    try:
        listing = fs.find(base, detail=True)
    except FileNotFoundError:
        return []
    root_prefix = fs._strip_protocol(storage.root).rstrip("/") + "/"
    out = []
    for path, info in listing.items():
        if info.get("type") == "directory" or not path.startswith(root_prefix):
            continue
        rel = path[len(root_prefix) :]
        if rel:
            out.append(TreeEntry(rel, path, FILE, int(info.get("size") or 0), mtime_ms(info)))
    out.sort(key=lambda e: e.rel)
    return out


def _walk_local(root_real: str, base: str, prefix: str) -> list[TreeEntry]:
    start_real = os.path.realpath(base)
    if not is_within(start_real, root_real):
        return []  # the directory itself is a link out of the root: never looked through
    out: list[TreeEntry] = []
    names: dict[str, int] = {}  # real directory -> times listed
    stack = [(base, prefix, start_real, frozenset([start_real]))]
    while stack:
        path, rel, real, ancestors = stack.pop()
        names[real] = names.get(real, 0) + 1
        if names[real] > MAX_NAMES:
            continue  # a hostile web of links: each directory is listed a bounded number of times
        try:
            scan = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for de in scan:
            name_real = posixpath.join(real, de.name)
            r = rel + de.name
            st = de.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                target = os.path.realpath(de.path)
                if os.path.isdir(de.path):  # follows the link
                    out.append(TreeEntry(r, de.path, DIR_LINK, 0, _ms(st), target, name_real))
                    if is_within(target, root_real) and target not in ancestors:  # not a loop
                        stack.append((de.path, r + "/", target, ancestors | {target}))
                else:
                    out.append(TreeEntry(r, de.path, LINK, st.st_size, _ms(st), target, name_real))
            elif stat.S_ISDIR(st.st_mode):
                stack.append((de.path, r + "/", name_real, ancestors | {name_real}))
            else:
                out.append(TreeEntry(r, de.path, FILE, st.st_size, _ms(st), name_real, name_real))
    out.sort(key=lambda e: e.rel)
    return out


def _ms(st: os.stat_result) -> int:
    return st.st_mtime_ns // 1_000_000


def links_traversed(path: str) -> set[str]:
    """The symbolic links (each as real parent directory + base name) that resolving the
    absolute local ``path`` goes through, the last component included; at most
    :data:`MAX_LINKS` are followed (a loop ends there)."""
    out: set[str] = set()
    todo = [p for p in path.split("/") if p][::-1]  # a stack: next component last
    cur = "/"
    followed = 0
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":
            cur = posixpath.dirname(cur)
            continue
        nxt = posixpath.join(cur, part)
        if not os.path.islink(nxt):
            cur = nxt
            continue
        followed += 1
        if followed > MAX_LINKS:
            break
        out.add(nxt)
        target = os.readlink(nxt)
        if target.startswith("/"):
            cur = "/"
        todo.extend([p for p in target.split("/") if p][::-1])
    return out


def resolve_all(paths: list[str]) -> tuple[set[str], set[str]]:
    """For absolute local ``paths``: (their real paths, every link resolving them goes
    through, as :func:`links_traversed` names links); each directory is resolved once."""
    reals: set[str] = set()
    links: set[str] = set()
    dirs: dict[str, str] = {}
    for path in paths:
        parent, name = posixpath.split(path)
        real_parent = dirs.get(parent)
        if real_parent is None:
            links |= links_traversed(parent)
            real_parent = dirs[parent] = os.path.realpath(parent)
        leaf = posixpath.join(real_parent, name)
        if os.path.islink(leaf):
            links |= links_traversed(leaf)
            leaf = os.path.realpath(leaf)
        reals.add(leaf)
    return reals, links


def escapes_root(storage: Storage, path: str) -> bool:
    """Whether creating, replacing or deleting the name ``path`` (below the root) would act
    outside the root because a directory on its way is a link leading out (local disk only;
    a link as the last component is replaced or unlinked, never followed, by writes and
    deletes here)."""
    if storage.protocol != "file":
        return False
    return not is_within(os.path.realpath(posixpath.dirname(path)), real_root(storage))
