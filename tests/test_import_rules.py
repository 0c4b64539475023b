"""The layering rules of ``docs/architecture.md``, read from the source with ``ast``: every import of every
module under ``src/agentloft`` counts, the ones inside functions too (they load the module all the same);
only those under ``if TYPE_CHECKING:`` are left out (they never run).

- chat never imports a2a (A2A builds on chat, not the other way round);
- documents never imports tools (tools build on documents);
- sign-in (auth, identity) never imports tools: the network guard it uses is core's;
- no module outside the HTTP edge (``HTTP_EDGE``: routers, request dependencies, pages, middleware, the
  A2A server app) imports FastAPI or Starlette: services take plain values and raise ``AppError``;
- core imports no domain;
- two domain folders import each other only where ``MUTUAL`` allows it (each such pair is written down,
  with why, in the architecture notes).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import agentloft

SRC = Path(agentloft.__file__).parent
# The folders that are no domain of their own.
NOT_DOMAINS = frozenset({"migrations"})
# Modules that speak HTTP and so may import FastAPI or Starlette (dotted names; a trailing "." is a package).
HTTP_EDGE = (
    "agentloft.app", "agentloft.web.",
    "agentloft.core.errors", "agentloft.core.dependencies", "agentloft.core.body_limit",
    "agentloft.core.requests", "agentloft.core.public_url", "agentloft.core.redis",
    "agentloft.auth.csrf", "agentloft.a2a.rest", "agentloft.a2a.server", "agentloft.a2a.limits",
)
HTTP_EDGE_NAMES = ("router", "dependencies")  # a domain's routes and its request dependencies
# Pairs of domain folders that import each other today (docs/architecture.md, "Allowed loops"). A new
# pair fails the test; one broken since should leave this list and the notes (not enforced, so that
# breaking a loop never fails a change).
MUTUAL = frozenset({
    ("a2a", "agents"), ("agents", "tools"), ("audit", "auth"), ("auth", "groups"), ("auth", "identity"),
    ("auth", "system"), ("chat", "system"), ("identity", "web"), ("knowledge", "llm"),
    ("system", "tools"),
})


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module, or ``module.name`` for ``from module import name``


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:``."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for n in ast.walk(node))
    return inside


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:  # relative: resolved against the importing module's package
        package = module.split(".")[: len(module.split(".")) - node.level + int(is_package)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def _imports_of(path: Path) -> list[Import]:
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    return [Import(module, target) for node in ast.walk(tree) if id(node) not in skip
            for target in _targets(node, module, path.name == "__init__.py")]


@cache
def imports() -> tuple[Import, ...]:
    return tuple(i for path in sorted(SRC.rglob("*.py")) if _domain(_module_name(path)) not in NOT_DOMAINS
                 for i in _imports_of(path))


def _domain(module: str) -> str:
    """The folder a module belongs to (``agentloft.chat.engine`` → ``chat``); the package's own top-level
    modules (``app``, ``cli``) are their own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_under(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


def _forbidden(importer: str, imported: str) -> list[str]:
    """Every ``importer`` module's import of the ``imported`` package, as ``module -> target``."""
    return sorted({f"{i.module} -> {i.target}" for i in imports()
                   if _is_under(i.module, importer) and _is_under(i.target, imported)})


def test_the_walk_sees_the_package() -> None:
    assert len({i.module for i in imports()}) > 150
    assert Import("agentloft.app", "agentloft.chat.router") in imports()  # ``from agentloft.chat import router``


def test_chat_never_imports_a2a() -> None:
    assert _forbidden("agentloft.chat", "agentloft.a2a") == []


def test_documents_never_imports_tools() -> None:
    assert _forbidden("agentloft.documents", "agentloft.tools") == []


def test_sign_in_never_imports_tools() -> None:
    assert _forbidden("agentloft.auth", "agentloft.tools") == []
    assert _forbidden("agentloft.identity", "agentloft.tools") == []


def _at_http_edge(module: str) -> bool:
    return (module.rsplit(".", 1)[-1] in HTTP_EDGE_NAMES
            or any(module.startswith(e) if e.endswith(".") else module == e for e in HTTP_EDGE))


def test_only_the_http_edge_imports_fastapi_or_starlette() -> None:
    found = sorted({f"{i.module} -> {i.target}" for i in imports() if not _at_http_edge(i.module)
                    and (_is_under(i.target, "fastapi") or _is_under(i.target, "starlette"))})
    assert found == []


def test_core_imports_no_domain() -> None:
    found = sorted({f"{i.module} -> {i.target}" for i in imports() if _domain(i.module) == "core"
                    and i.target.startswith("agentloft.") and _domain(i.target) not in ("core", "__version__")})
    assert found == []


def _folder_edges() -> set[tuple[str, str]]:
    return {(_domain(i.module), _domain(i.target)) for i in imports()
            if i.target.startswith("agentloft.") and "." in i.module}


def test_domain_folders_import_each_other_only_where_the_notes_allow() -> None:
    edges = _folder_edges()
    mutual = {(a, b) for a, b in edges if a < b and (b, a) in edges}
    assert mutual - MUTUAL == set(), "a new loop between two folders: break it, or allow it in the notes"
