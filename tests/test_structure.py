"""The package's structure, checked from its source (docs/architecture.md): no import cycle
(imports inside functions count), no ``_private`` name imported from another module,
modules of bounded size that say what they guarantee, one error tree exported from
``delta_pyds``, loggers named after their module. The layer order and "pyspark only under
delta_pyds/spark" are import-linter contracts (pyproject.toml, run by .ci/run)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import pathlib
import re
import subprocess
import sys

import delta_pyds
from delta_pyds import errors

PACKAGE = pathlib.Path(delta_pyds.__file__).parent
MAX_LINES = 650


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: pathlib.Path):
    """(imported module, imported names) of every import in the module, at any depth."""
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield (sub, ()) if sub in MODULES else (module, (alias.name,))


def _owner(module: str) -> str | None:
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for module, _ in _imports(name, path):
            owner = _owner(module)
            if owner and owner != name and owner != "delta_pyds":
                graph[name].add(owner)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_module_scan_sees_the_package():
    assert len(MODULES) > 80
    assert "delta_pyds.protocol.schema" in MODULES and "delta_pyds.spark.datasource.source" in MODULES
    assert "delta_pyds.table.snapshot" in _graph()["delta_pyds.read.explain"]


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_cycle_detection_finds_a_cycle():
    graph = _graph()
    graph["delta_pyds.protocol.paths"].add("delta_pyds.read.scan")
    graph["delta_pyds.read.scan"].add("delta_pyds.protocol.paths")
    assert ["delta_pyds.protocol.paths", "delta_pyds.read.scan"] in _cycles(graph)


def test_no_private_name_imported_from_another_module():
    found = []
    for name, path in MODULES.items():
        for module, names in _imports(name, path):
            if not module.startswith("delta_pyds"):
                continue
            found += [
                f"{name} imports {n} from {module}" for n in names if n.startswith("_") and not n.startswith("__")
            ]
    assert found == []


def test_modules_are_small_and_say_what_they_hold():
    long = {n: c for n, p in MODULES.items() if (c := p.read_text(encoding="utf-8").count("\n")) > MAX_LINES}
    assert long == {}
    undocumented = [
        n
        for n, p in MODULES.items()
        if p.stat().st_size and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert undocumented == []


def test_the_top_level_holds_packages_and_entry_points():
    top = sorted(p.name for p in PACKAGE.iterdir() if p.suffix == ".py")
    assert top == ["__init__.py", "__main__.py", "errors.py", "version.py"]


def test_every_error_class_is_in_the_error_tree_and_exported():
    defined_elsewhere = []
    for name, path in MODULES.items():
        # the Spark layer's AnalysisException subclasses of the tree's errors (the core cannot import pyspark)
        if name in ("delta_pyds.errors", "delta_pyds.spark.session.analysis_errors"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and re.search(r"(Error|Exception)$", node.name):
                defined_elsewhere.append(f"{name}.{node.name}")
    assert defined_elsewhere == []
    from delta_pyds.spark.session import analysis_errors

    spark_classes = [
        c for _, c in inspect.getmembers(analysis_errors, inspect.isclass) if c.__module__ == analysis_errors.__name__
    ]
    assert all(issubclass(c, analysis_errors.AnalysisException) for c in spark_classes)
    assert all(
        issubclass(c, errors.DeltaError) for c in spark_classes if c is not analysis_errors.DeltaAnalysisException
    )
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert len(classes) > 20
    for cls in classes:
        assert issubclass(cls, errors.DeltaError), cls
        assert cls.__name__ in delta_pyds.__all__ and getattr(delta_pyds, cls.__name__) is cls


# the bare builtin errors the package raises, per module: internal checks whose callers never let
# them fail (deletion vector encoding, staged-file bookkeeping, a file-like object's seek, log
# segments, snapshot extension, statistics alignment, compaction specs, the variant visitor's
# abstract method, the SQL parser's unreachable end), and StructType's mapping lookup (KeyError)
INTERNAL_CHECKS = {
    ("delta_pyds.protocol.deletion_vectors", "ValueError"): 7,
    ("delta_pyds.write.native_files", "ValueError"): 3,
    ("delta_pyds.storage.checked_input", "ValueError"): 2,
    ("delta_pyds.log.segment", "ValueError"): 1,
    ("delta_pyds.table.snapshot", "ValueError"): 1,
    ("delta_pyds.skipping.files", "ValueError"): 1,
    ("delta_pyds.operations.compaction", "RuntimeError"): 1,
    ("delta_pyds.variant.shredding", "NotImplementedError"): 1,
    ("delta_pyds.spark.sql.dml", "AssertionError"): 1,
    ("delta_pyds.protocol.schema", "KeyError"): 1,
}
BUILTIN_ERRORS = {"ValueError", "RuntimeError", "AssertionError", "NotImplementedError", "KeyError", "Exception"}


def test_bare_builtin_errors_are_type_errors_or_listed_internal_checks():
    """errors.py's promise: what the package raises on purpose is a DeltaError, Python's TypeError
    for an argument of the wrong type, or one of the listed internal checks."""
    found: dict[tuple[str, str], int] = {}
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(target, ast.Name) and target.id in BUILTIN_ERRORS:
                    found[(name, target.id)] = found.get((name, target.id), 0) + 1
    assert found == INTERNAL_CHECKS


def test_loggers_are_named_after_their_module():
    literal = [n for n, p in MODULES.items() if re.search(r"getLogger\(\s*['\"]", p.read_text(encoding="utf-8"))]
    assert literal == []


def test_the_pre_release_shims_are_gone():
    # delta_pyds.tables, delta_pyds.write_plan and delta_pyds.package re-exported moved names
    # before 0.1.0; nothing refers to them any more (docs, examples, README; architecture.md
    # keeps the table of where old modules went)
    for old in ("delta_pyds.tables", "delta_pyds.write_plan", "delta_pyds.package"):
        assert importlib.util.find_spec(old) is None, old
    root = PACKAGE.parent
    docs = [p for p in root.glob("docs/**/*.md") if p.name != "architecture.md"]
    texts = [root / "README.md", *docs, *root.glob("examples/**/*.py")]
    stale = [
        str(p.relative_to(root))
        for p in texts
        if re.search(r"delta_pyds\.(tables|write_plan|package)\b", p.read_text(encoding="utf-8"))
    ]
    assert stale == []


def test_the_version_is_defined_once():
    # pyproject reads it from delta_pyds/version.py; nothing else spells it
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r"^(version|dynamic) = (.*)$", pyproject, re.M) == [
        ("dynamic", '["version"]'),
        ("version", '{attr = "delta_pyds.version.__version__"}'),
    ]
    assert [p for p in PACKAGE.rglob("*.py") if "__version__ = " in p.read_text(encoding="utf-8")] == [
        PACKAGE / "version.py"
    ]
    assert re.fullmatch(r"\d+\.\d+\.\d+", delta_pyds.__version__)


def test_the_api_reference_lists_every_module():
    # docs/reference/packages/<package>.md holds one ``::: module`` block per module
    pages = PACKAGE.parent / "docs" / "reference" / "packages"
    missing = []
    for package in sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        text = (pages / f"{package}.md").read_text(encoding="utf-8")
        listed = set(re.findall(r"^::: (\S+)", text, re.M))
        missing += [m for m in MODULES if m.startswith(f"delta_pyds.{package}.") and m not in listed]
    assert missing == []


def test_runtime_pandas_range_is_what_pyspark_supports():
    """A plain ``pip install`` must not resolve a pandas pyspark warns about (pyspark 4.3's
    pyspark/sql/pandas/utils.py: "does not yet fully support pandas >= 3.0.0"), and the
    runtime range must be the one the tests run (the ``test`` extra)."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((pathlib.Path(delta_pyds.__file__).parents[1] / "pyproject.toml").read_text())["project"]
    runtime = {Requirement(r).name: Requirement(r).specifier for r in project["dependencies"]}
    tested = {Requirement(r).name: Requirement(r).specifier for r in project["optional-dependencies"]["test"]}
    assert "3.0.0" not in runtime["pandas"] and "3.1.1" not in runtime["pandas"]
    assert "2.2.0" in runtime["pandas"] and "2.3.3" in runtime["pandas"]
    assert runtime["pandas"] == tested["pandas"]


def test_core_never_imports_pyspark():
    # every module but the Spark layer
    code = (
        "import sys, pkgutil, importlib; sys.modules['pyspark'] = None; import delta_pyds\n"
        "n = 0\n"
        "for m in pkgutil.walk_packages(delta_pyds.__path__, 'delta_pyds.'):\n"
        "    if m.name.startswith('delta_pyds.spark'): continue\n"
        "    importlib.import_module(m.name); n += 1\n"
        "print(n)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 60


def test_object_store_tests_carry_the_objectstore_marker():
    # every test using a server fixture (s3_server, azure_server, gcs_server, object_store) is
    # marked, so -m "not objectstore" runs without starting the servers
    tests = PACKAGE.parent / "tests"

    def collected(marker, files=("test_object_store.py", "test_storage.py")):
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "-m", marker]
            + [str(tests / "storage" / name) for name in files],
            capture_output=True,
            text=True,
            cwd=str(PACKAGE.parent),
        )
        return {line.split("::")[0] for line in out.stdout.splitlines() if "::" in line}

    assert collected("objectstore") == {"tests/storage/test_object_store.py", "tests/storage/test_storage.py"}
    assert collected("not objectstore") == {"tests/storage/test_storage.py"}
    # modules whose fixtures reach a server through request.getfixturevalue mark themselves
    assert collected("not objectstore", ("test_network_faults.py", "test_network_faults_ranges.py")) == set()


def test_test_file_names_are_unique():
    # the tests are no packages (rootdir imports): two test files of one name in different
    # folders stop the whole run at collection ("import file mismatch"; CI failed so once)
    from collections import Counter

    names = Counter(p.name for p in (PACKAGE.parent / "tests").rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []


def test_shared_encodings_are_spelled_once_in_protocol():
    # the void-type test (protocol.schema.is_void_type), a field as the data files hold it
    # (protocol.schema.physical_field), the null partition directory name, the Hive escape set
    # and its inverse (protocol.partition_values), and "attach a deletion vector, loosen the
    # stats" (protocol.deletion_vectors.with_deletion_vector) are defined once; everything
    # else calls them
    patterns = {
        "void": r"""==\s*["']void["']|["']void["']\s*\)""",
        "null partition name": r"""=\s*["']__HIVE_DEFAULT_PARTITION__["']""",
        "escape set": r"chr\(c\) for c in range\(",
        "percent unescape": r"%\(\[0-9A-Fa-f\]\{2\}\)",
        "physical field": r"def _?physical_(field|type)\(",
        "attach a deletion vector": r"""\[["']deletionVector["']\]\s*=\s*\w+\.to_dict\(\)""",
    }
    owners = {
        "void": "delta_pyds.protocol.schema",
        "null partition name": "delta_pyds.protocol.partition_values",
        "escape set": "delta_pyds.protocol.partition_values",
        "percent unescape": "delta_pyds.protocol.partition_values",
        "physical field": "delta_pyds.protocol.schema",
        "attach a deletion vector": "delta_pyds.protocol.deletion_vectors",
    }
    for what, pattern in patterns.items():
        spelled = {n for n, p in MODULES.items() if re.search(pattern, p.read_text(encoding="utf-8"))}
        assert spelled == {owners[what]}, what


def test_drop_void_is_the_core_rule():
    from delta_pyds.protocol.schema import PrimitiveType, StructField, StructType, without_void_columns

    schema = StructType(
        (
            StructField("a", PrimitiveType("long")),
            StructField("v", PrimitiveType("void")),
            StructField("s", StructType((StructField("n", PrimitiveType("void")),))),
        )
    )
    assert without_void_columns(schema).names == ["a", "s"]
    # the Spark layer's drop_void is the same rule (importing schema_convert imports pyspark)
    from delta_pyds.spark.session.schema_convert import drop_void

    assert drop_void(schema) == without_void_columns(schema)


def test_written_files_are_cleaned_up_by_the_one_context_manager():
    # issue #28 item 2: no hand-written ``except BaseException:`` cleanup; the ones left both
    # re-raise: transaction.staged_files.cleanup_on_failure (the context manager every writer
    # uses) and write.parquet_writer's abort (a write task's own files; raises the interrupt)
    catching = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and isinstance(node.type, ast.Name):
                if node.type.id == "BaseException":
                    catching.add(name)
    assert catching == {"delta_pyds.transaction.staged_files", "delta_pyds.write.parquet_writer"}


# functions of more than 60 lines (issue #28 item 2: bodies as named steps). None is left:
# long bodies are named steps, flat dispatches one helper per form. The list may only
# shrink (a name split elsewhere may stay listed until that lands).
LONG_FUNCTIONS_LEFT: frozenset[str] = frozenset()


def _long_functions(limit: int = 60) -> set[str]:
    out = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > limit:
                    out.add(f"{name}:{node.name}")
    return out


def test_functions_are_short():
    assert _long_functions() - LONG_FUNCTIONS_LEFT == set()


def _architecture_modules() -> dict[str, str]:
    """module -> the package row of docs/architecture.md's "Packages" table naming it."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("\n## Packages", 1)[1].split("\n#", 1)[0]
    out: dict[str, str] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith(("`", "[`")):
            continue
        package = re.search(r"`([\w.]+)`", cells[0]).group(1)  # type: ignore[union-attr]
        for module in re.findall(r"`([\w.]+)`", cells[1]):
            out["delta_pyds." + (package if module == package else f"{package}.{module}")] = package
    return out


def test_the_architecture_page_lists_every_module():
    # docs/architecture.md's "Packages" table: one row per package (spark's subpackages
    # each get their own), naming every module of it once
    listed = _architecture_modules()
    modules = {m for m, p in MODULES.items() if p.name != "__init__.py"} - {"delta_pyds.__main__"}
    assert sorted(modules - set(listed)) == [], "modules missing from docs/architecture.md"
    assert sorted(set(listed) - modules) == [], "docs/architecture.md names modules that do not exist"


def _defined_names(tree: ast.AST) -> set[str]:
    """Names a module (or class body) defines at its top level."""
    names: set[str] = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            names |= _defined_names(node)
            for h in getattr(node, "handlers", []):
                names |= _defined_names(h)
            names |= _defined_names(ast.Module(body=node.orelse, type_ignores=[]))
    return names


def _resolves(ref: str) -> bool:
    """Whether ``delta_pyds.a.b.Name.attr`` names a module and, within it, a defined name
    (and a name defined in that class's body)."""
    parts = ref.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            rest = parts[cut:]
            scope: ast.AST = ast.parse(MODULES[module].read_text(encoding="utf-8"))
            if module == "delta_pyds" and rest and rest[0] in delta_pyds.__all__:
                return True  # a public name, reached through the package's __getattr__
            for name in rest:
                if name not in _defined_names(scope):
                    return False
                nested = [n for n in getattr(scope, "body", []) if isinstance(n, ast.ClassDef) and n.name == name]
                if not nested:
                    return True  # an attribute of a function or value: not followed further
                scope = nested[0]
            return True
    return False


def test_docstring_cross_references_resolve():
    """Every ``delta_pyds.…`` name a docstring or comment cites is a module of the package and,
    after it, names that module defines (issue 48: no references to modules or errors that do
    not exist)."""
    cited = re.compile(r"~?\b(delta_pyds(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
    broken = set()
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        for m in cited.finditer(text):
            ref = m.group(1).rstrip(".")
            if ref == "delta_pyds.zip":
                continue  # the file python -m delta_pyds.package writes
            line = text.count("\n", 0, m.start()) + 1
            if not _resolves(ref):
                broken.add(f"{name}:{line}: {ref}")
    assert sorted(broken) == []


def test_every_conf_the_package_reads_is_documented():
    """spark/session/conf.py's promise: every spark.pydelta.* / spark.databricks.delta.* conf it names, and
    the auto compaction family, is documented under docs/."""
    docs = "\n".join(p.read_text(encoding="utf-8") for p in (PACKAGE.parent / "docs").rglob("*.md"))
    conf = MODULES["delta_pyds.spark.session.conf"].read_text(encoding="utf-8")
    names = set(re.findall(r"\"(spark\.(?:pydelta|databricks)\.[A-Za-z.]+)\"", conf))
    compaction = MODULES["delta_pyds.operations.auto_compact"].read_text(encoding="utf-8")
    suffixes = re.findall(r"CONF_PREFIX \+ \"([A-Za-z.]+)\"", compaction)
    names |= {"spark.databricks.delta.autoCompact." + s for s in suffixes}
    assert len(names) >= 16
    assert sorted(n for n in names if n not in docs) == []


def test_modules_cite_no_document_outside_the_repository():
    """Docstrings point at docs/ pages, never at a design document a user does not have."""
    outside = [n for n, p in MODULES.items() if re.search(r"DESIGN\.md|\.\./shared|§\d", p.read_text(encoding="utf-8"))]
    assert outside == []


def test_the_quick_loop_needs_no_object_store_client(tmp_path):
    """``make quick``'s selection of tests/storage passes with s3fs, adlfs, gcsfs and botocore
    unimportable: tests that need a client library carry the objectstore marker."""
    (tmp_path / "no_store_clients.py").write_text(
        "import sys\n"
        "for m in ('s3fs', 'adlfs', 'gcsfs', 'botocore', 'boto3', 'aiobotocore'):\n"
        "    sys.modules[m] = None\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no_store_clients"]
        + ["-m", "not spark and not objectstore and not slow", "tests/storage"],
        capture_output=True,
        text=True,
        cwd=str(PACKAGE.parent),
        env=env,
    )
    assert out.returncode == 0, out.stdout[-3000:]


def test_tests_mirror_the_packages():
    """Every package of delta_pyds has its tests in the folder of the same path under tests/
    (the MERGE package's are beside the other DeltaTable operations' in tests/spark/tables)."""
    tests = PACKAGE.parent / "tests"
    beside_parent = {"spark/commands/merge"}
    packages = {p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("__init__.py")} - {"."}
    assert sorted(p for p in packages - beside_parent if not (tests / p).is_dir()) == []
    assert all((tests / p).parent.is_dir() and list((tests / p).parent.glob("test_merge*.py")) for p in beside_parent)
