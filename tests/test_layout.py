"""The package's shape: one-way layers, no import circles, a light core, a sorted surface."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import parse_python

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "deniable"
HEAVY = (
    "numba",
    "pandas",
    "matplotlib",
    "sqlalchemy",
    "fastapi",
    "sklearn",
    "pydantic",
    "typer",
    "yaml",
)


def module_name(path: Path) -> str:
    parts = ["deniable", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(source: str, name: str, is_package: bool) -> set[str]:
    """Modules of the package that ``name`` imports anywhere: at the top, inside
    functions and methods (lazily), under ``if``/``try``, by ``importlib.import_module``
    of a literal name; not what is imported only for type checking."""
    tree = parse_python(source)
    package = name if is_package else name.rpartition(".")[0]
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and is_type_checking(node)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return {m for m in found if m in MODULES and m != name}


GRAPH = {
    name: imports(path.read_text(), name, path.name == "__init__.py")
    for name, path in MODULES.items()
}


def test_no_import_circle_among_the_package_modules():
    # Tarjan's strongly connected components: any component of two or more is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in GRAPH[v]:
                circles.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in GRAPH:
        if v not in index:
            strong(v)
    assert circles == []


def test_the_circle_detector_finds_a_circle():
    saved = dict(GRAPH)
    try:
        GRAPH["deniable.tallies"] = GRAPH["deniable.tallies"] | {"deniable.mechanisms._designs"}
        with pytest.raises(AssertionError):
            test_no_import_circle_among_the_package_modules()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


#: The floors, bottom first: a module imports only from its own floor's rooms (its own
#: subpackage) and the floors below (docs/design.md). ``deniable`` is the package face,
#: ``_entry`` the console script.
FLOORS = [
    {"errors", "_validation", "_extras", "_names"},
    {"tallies"},
    {"mechanisms"},
    {"estimation"},
    {"planning", "tables", "audit"},
    {"data"},
    {"_fitting"},
    {"list_experiment"},
    {"analysis"},
    {"plots"},
    {"collection"},
    {"cli"},
    {"_entry"},
]
FLOOR = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
#: The face (which gives analysis's statistical_parity lazily) sits above analysis.
FACE = FLOOR["analysis"] + 0.5


def floor_of(module: str) -> float:
    parts = module.split(".")
    return FACE if len(parts) == 1 else FLOOR[parts[1]]


def test_every_module_lives_on_a_floor():
    assert {m.split(".")[1] for m in MODULES if "." in m} <= set(FLOOR)


def test_the_layers_import_one_way_counting_every_import():
    """Function-level imports included: nothing imports a floor above its own, and two
    rooms on one floor (planning and tables; errors, validation and _extras) import
    each other only where the lower room is errors or validation."""
    upward = []
    for name, deps in GRAPH.items():
        for dep in deps:
            here, there = floor_of(name), floor_of(dep)
            same_room = name.split(".")[:2] == dep.split(".")[:2]
            basics = dep.split(".")[1:2] in (["errors"], ["_validation"])
            if there > here or (there == here and not same_room and not basics):
                upward.append((name, dep))
    assert upward == []


def test_the_import_reader_sees_lazy_imports():
    source = "def f():\n    from ..estimation._estimates import EstimateResult\n"
    assert imports(source, "deniable.mechanisms._designs", False) == {
        "deniable.estimation._estimates"
    }
    guarded = "if TYPE_CHECKING:\n    from ..estimation import results\n"
    assert imports(guarded, "deniable.mechanisms._designs", False) == set()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("deniable.io", "deniable.tables.frames"),
        ("deniable.arrow", "deniable.tables.arrow"),
        ("deniable.spark", "deniable.tables.spark"),
        ("deniable.datasets", "deniable.data"),
        ("deniable.demo", "deniable.data._demo"),
    ],
)
def test_the_old_paths_are_gone(old, new):
    """Moved in 0.2 with a warning for one release, removed in 0.3 (issue 42)."""
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    assert new in MODULES


def test_modules_stay_small():
    sizes = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > 600} == {}


@pytest.mark.slow
def test_import_deniable_loads_numpy_and_scipy_only():
    """Not pandas, numba or the extras; of SciPy, not stats, optimize or sparse."""
    code = (
        "import sys, deniable, deniable.mechanisms, deniable.estimation, deniable.planning\n"
        "import deniable.collection.respondent._client, deniable.tables.frames, deniable.tallies\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    # SciPy's heavy subpackages load where they are used, not on import
    code = (
        "import sys, deniable, deniable.mechanisms, deniable.estimation, deniable.planning\n"
        "print(','.join(sorted({m for m in sys.modules if m.split('.')[:2] in "
        "(['scipy', 'stats'], ['scipy', 'optimize'], ['scipy', 'sparse'])})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    # and the check is real: the analysis subpackage does load pandas (and estimating
    # a prevalence with its default interval loads scipy.stats)
    code = (
        "import sys, numpy as np, deniable\n"
        "e = deniable.estimate(deniable.Warner(p=0.7), np.array([0, 1, 1]))\n"
        "e.confidence_interval(0.95, 'beta')\n"
        "print('scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    code = "import sys, deniable.analysis; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def isort_key(name: str) -> tuple[int, str]:
    """The order of ruff's RUF022: CONSTANTS, then Classes, then functions, each sorted."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


PUBLIC = sorted(
    name
    for name in MODULES
    if not any(part.startswith("_") for part in name.split(".")) and "web" not in name
)


def is_endpoint(node: ast.stmt) -> bool:
    """A route or a CLI command: a function registered by a decorator
    (``@router.get(...)``, ``@app.command(...)``), whose name is an HTTP path or a
    command, not a Python name to import."""
    for decorator in getattr(node, "decorator_list", []):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr in (
            "get",
            "post",
            "put",
            "delete",
            "command",
            "callback",
        ):
            return True
    return False


def public_definitions(path: Path) -> set[str]:
    """Names a module defines at its top level (functions, classes, assignments) that
    do not start with an underscore, endpoints and its logger aside."""
    names: set[str] = set()
    for node in parse_python(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not is_endpoint(node):
                names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_") and n != "log"}


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_module_has_a_sorted_complete_all(name):
    """``__all__`` is the module's public surface exactly: sorted, naming only what the
    module has, and every public name it defines (a helper is ``_private``)."""
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported, key=isort_key), name
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which it lacks"
    missing = public_definitions(MODULES[name]) - set(exported)
    assert not missing, f"{name} defines public names outside __all__: {sorted(missing)}"


def test_py_typed_is_shipped():
    assert (SRC / "py.typed").is_file()


@pytest.mark.slow
def test_core_install_estimates_without_the_extras(tmp_path):
    """An environment with only the core dependencies runs an estimate; extras fail clearly."""
    uv = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if uv is None:
        uv_cmd = [sys.executable, "-m", "uv"]
        probe = subprocess.run([*uv_cmd, "--version"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("uv is not installed (the README's commands install it)")
    else:
        uv_cmd = [uv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    req = tmp_path / "core.txt"
    subprocess.run(
        [*uv_cmd, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project",
         "--output-file", str(req)],
        cwd=ROOT, check=True, capture_output=True, env=env,
    )  # fmt: skip
    venv = tmp_path / "venv"
    subprocess.run([*uv_cmd, "venv", "-q", str(venv)], check=True, capture_output=True, env=env)
    python = venv / "bin" / "python"
    for args in (["-r", str(req)], ["--no-deps", str(ROOT)]):
        done = subprocess.run(
            [*uv_cmd, "pip", "install", "-q", "--python", str(python), *args],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    code = """
import importlib.util, sys
import numpy as np
import deniable
from deniable import ForcedResponse, estimate
assert importlib.util.find_spec("pandas") is None, "pandas is in the core install"
assert importlib.util.find_spec("numba") is None, "numba is in the core install"
heavy = [m for m in sys.modules if m.split(".")[:2] in (["scipy", "stats"], ["scipy", "sparse"])]
assert not heavy, heavy
from deniable.mechanisms._kernels import kernel_backend
assert kernel_backend() == "numpy"
olh = deniable.LocalHashing(k=20, epsilon=2.0)
assert abs(estimate(olh, olh.randomize(np.arange(2000) % 20)).estimate.sum() - 1) < 0.3
coins = ForcedResponse(p_yes=0.25, p_no=0.25)
result = estimate(coins, coins.randomize(np.arange(1000) % 2 == 0))
print(round(float(result.confidence_interval().high[1] - result.confidence_interval().low[1]), 3))
try:
    import deniable.analysis
except ModuleNotFoundError as exc:
    print(exc)
"""
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    width, message = out.stdout.strip().splitlines()
    assert 0.05 < float(width) < 0.25
    assert "pip install 'deniable[analysis]'" in message
    # the core install's size (issue 28: under 200 MB of site-packages, pip aside)
    site = next((venv / "lib").glob("python3*/site-packages"))
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and "pip" not in f.parts)
    assert size < 200 * 2**20, size / 2**20


@pytest.mark.parametrize(
    ("blocked", "code", "extra"),
    [
        ("pandas", "import deniable.data", "analysis"),
        (
            "pandas",
            "import numpy as np, deniable\n"
            "deniable.estimate(deniable.Warner(p=0.7), np.array([0, 1])).to_frame()",
            "analysis",
        ),
        ("pyspark", "import deniable.tables.spark as s\ns.local_session()", "spark"),
        ("typer", "from deniable._entry import main\nmain()", "cli"),
    ],
)
def test_a_missing_extra_names_the_one_install_command(blocked, code, extra):
    """Each extra's absence (the module made unimportable) gives one line naming
    ``pip install 'deniable[...]'``; the console script prints only that line."""
    prelude = f"import sys\nsys.modules[{blocked!r}] = None\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, check=False
    )
    assert out.returncode != 0
    assert f"pip install 'deniable[{extra}]'" in out.stderr
    if extra == "cli":
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("deniable: ")


def rooms_of(package: str) -> dict[str, set[str]]:
    """Which rooms (the direct subpackages or modules) of ``package`` each room imports."""
    depth = package.count(".") + 1
    graph: dict[str, set[str]] = {}
    for name, deps in GRAPH.items():
        if not name.startswith(package + "."):
            continue
        room = name.split(".")[depth]
        for dep in deps:
            if dep.startswith(package + ".") and dep.split(".")[depth] != room:
                graph.setdefault(room, set()).add(dep.split(".")[depth])
    return graph


def test_the_collection_rooms_import_one_way():
    """No circle between the rooms of collection (model, credentials, store, respondent,
    exports, server and the modules beside them), imports inside functions included."""
    graph = rooms_of("deniable.collection")
    seen: set[str] = set()
    order: list[str] = []

    def visit(room: str, path: tuple[str, ...]) -> None:
        assert room not in path, f"rooms import in a circle: {' -> '.join((*path, room))}"
        if room in seen:
            return
        for dep in sorted(graph.get(room, ())):
            visit(dep, (*path, room))
        seen.add(room)
        order.append(room)

    for room in sorted(graph):
        visit(room, ())
    assert order.index("model") < order.index("store") < order.index("server")


def test_collection_is_rooms_and_no_folder_is_crowded():
    """collection holds subpackages and at most 10 modules directly; no folder of the
    package more than 25 modules."""
    direct = [p for p in (SRC / "collection").glob("*.py") if p.name != "__init__.py"]
    assert len(direct) <= 10, sorted(p.name for p in direct)
    rooms = [p for p in (SRC / "collection").iterdir() if (p / "__init__.py").is_file()]
    assert {p.name for p in rooms} >= {"model", "store", "respondent", "exports", "server"}
    for folder in {p.parent for p in SRC.rglob("*.py")}:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 25, (folder.relative_to(SRC), len(modules))


def test_no_function_is_over_100_lines():
    """Every function and method in src/ (its docstring included) is at most 100 lines."""
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(parse_python(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 100:
                    long.append((name, node.name, lines))
    assert long == []


def test_the_public_face_is_narrow():
    """At most 25 public modules (the package face, one face per subpackage and per
    optional dependency); every other module is private (a leading underscore), and no
    two modules share a name (issue 42)."""
    assert len(PUBLIC) <= 25, PUBLIC
    assert set(PUBLIC) >= {
        "deniable",
        "deniable.mechanisms",
        "deniable.estimation",
        "deniable.planning",
        "deniable.analysis",
        "deniable.collection.model",
        "deniable.collection.store",
        "deniable.collection.server",
    }
    leaves: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.name != "__init__.py":
            leaves.setdefault(name.rsplit(".", 1)[1].lstrip("_"), []).append(name)
    assert {leaf: names for leaf, names in leaves.items() if len(names) > 1} == {}


def test_each_room_of_collection_offers_its_use_not_its_parts():
    """A room's face names what a user of the room calls (the survey file, the store,
    the client, the exports, the study, the server), each from a private module, and
    nothing else: the parts stay importable by their private paths for the package
    itself and its tests."""
    for room, wanted in {
        "model": {"Survey", "Question", "load_survey", "parse_survey"},
        "store": {"Store", "database_url", "wave_analysis", "disclosure_report"},
        "respondent": {"parse_survey_url", "respond_reports", "ReportMemo"},
        "exports": {"export_bytes", "read_export", "r_script", "embed"},
        "study": {"arm_analysis", "pooled_estimate", "survey_results"},
        "server": {"create_app", "app_from_environment", "live_demo"},
    }.items():
        face = importlib.import_module(f"deniable.collection.{room}")
        assert wanted <= set(face.__all__), (room, wanted - set(face.__all__))
        assert len(face.__all__) <= 10, (room, face.__all__)
        for name in face.__all__:
            where = getattr(getattr(face, name), "__module__", None)
            if where is not None and where.startswith("deniable."):
                assert where.startswith(f"deniable.collection.{room}._"), (name, where)


#: The basement: the package root's private modules, which every room may import.
BASEMENT = {"deniable._validation", "deniable._extras"}


def room_of(module: str) -> str:
    """The room of a module: the subpackage of ``deniable`` it lives in, or for
    ``collection`` its subpackage (model, store, ...); the package root and its
    modules (errors, tallies, the basement) are the root."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "collection" and not parts[2].startswith("_"):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def through_private_modules(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import from one room into another room's private module."""
    crossing = []
    for name, deps in graph.items():
        for dep in deps:
            there = room_of(dep)
            inner = dep[len(there) + 1 :].split(".") if dep != there else []
            private = any(part.startswith("_") for part in inner)
            if room_of(name) != there and dep not in BASEMENT and private:
                crossing.append((name, dep))
    return sorted(crossing)


def test_rooms_import_each_other_through_their_faces():
    """A room imports another room only through its face (its ``__init__``, which names
    what other rooms use: the public names in ``__all__``, the internal ones beside it,
    loaded lazily where the face would otherwise load more), never a private module of
    it; imports inside functions included. The basement (``_validation``, ``_extras``)
    is every room's."""
    assert through_private_modules(GRAPH) == []


def test_the_face_check_finds_an_import_into_a_private_module():
    graph = {"deniable.analysis._power": {"deniable.mechanisms._designs"}}
    assert through_private_modules(graph) == [
        ("deniable.analysis._power", "deniable.mechanisms._designs")
    ]
    assert through_private_modules({"deniable.analysis._power": {"deniable.mechanisms"}}) == []
