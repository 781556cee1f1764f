"""Generate the pasteable Open WebUI filter function from the guardrail library.

`uv run python -m scaffold_guard.integrations.openwebui.build` writes
scaffold_guard/integrations/openwebui/scaffold_guard_filter.py; `--check` only says whether it is
current (a unit test runs the same check); `--out PATH` writes elsewhere. The file is assembled,
never edited: the frontmatter docstring, the guardrail modules the filter uses and the parts of
guardrail/policy.py it needs, then the template, with `from guardrail...` imports and the
modules' `__all__` dropped.

Deliberate choices:
- A copy-paste detector reports the generated file as a duplicate of guardrail/. It is
  one, on purpose: Open WebUI runs it where our packages are not installed.
- The build refuses text Open WebUI's loader would mangle: any `from utils`, `from apps`,
  `from main` or `from config` (rewritten anywhere), and any `word: value` docstring line
  beyond the intended frontmatter keys.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import guardrail.code_context
import guardrail.harmony
import guardrail.json_reply
import guardrail.json_shapes
import guardrail.model_profiles
import guardrail.patterns
import guardrail.policy
import guardrail.pythonic_reply
import guardrail.registries
import guardrail.reply_calls
import guardrail.scaffolding
import guardrail.shapes
from scaffold_guard.integrations.openwebui import filter_template

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "scaffold_guard_filter.py"
COMMAND = "uv run python -m scaffold_guard.integrations.openwebui.build"
LINE_LENGTH = 100
OPEN_WEBUI_REWRITES = ("from utils", "from apps", "from main", "from config")
"""What open_webui.utils.plugin.replace_imports rewrites anywhere in a pasted file."""
_FRONTMATTER_LINE = re.compile(r"^\s*([a-z_]+):\s*(.*)\s*$", re.IGNORECASE)
"""Open WebUI's own frontmatter pattern (open_webui.utils.plugin.extract_frontmatter)."""


class BuildError(Exception):
    """The sources cannot make a valid pasteable file; the message says why."""


@dataclass(frozen=True)
class _Source:
    path: Path
    text: str
    tree: ast.Module

    @classmethod
    def of(cls, path: str | Path) -> _Source:
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        return cls(path, text, ast.parse(text, str(path)))

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def segment(self, first: int, last: int) -> str:
        """Lines first..last (1-based, inclusive)."""
        return "".join(self.text.splitlines(keepends=True)[first - 1 : last]).rstrip() + "\n"

    def statements(self) -> list[ast.stmt]:
        """The module's top-level statements but its docstring, its imports and its
        `__all__` (the pasted file is one module, not the library's)."""
        body = self.tree.body
        if body and _is_string(body[0]):
            body = body[1:]
        rest = [s for s in body if not _is_import(s) and not _is_all(s)]
        for what, left_out in (("an import", _is_import), ("`__all__`", _is_all)):
            if rest and any(s.lineno > rest[0].lineno for s in body if left_out(s)):
                raise BuildError(f"{self.name}: {what} after the first statement")
        return rest

    def body(self) -> str:
        """Everything after the module's docstring and imports."""
        rest = self.statements()
        return self.segment(_first_line(rest[0]), rest[-1].end_lineno or 0) if rest else ""

    def imports(self) -> list[ast.Import | ast.ImportFrom]:
        return [s for s in self.tree.body if isinstance(s, ast.Import | ast.ImportFrom)]


def frontmatter(version: str) -> dict[str, str]:
    """The keys Open WebUI reads from the file's docstring (and shows on its Functions page)."""
    return {
        "title": "Scaffold Guard",
        "author": "scaffold-guard",
        "version": version,
        "license": "MIT",
        "description": "Strips the raw tool-call markup small local models write into answers.",
        "required_open_webui_version": "0.12.4",
    }


_NOTICE = f"""\
GENERATED FILE, do not edit by hand: in the scaffold-guard repository,
`{COMMAND}` writes it.
It is the guardrail library's own code (the filter's modules of guardrail/ whole, the parts of
guardrail/policy.py it uses), then the filter class
(scaffold_guard/integrations/openwebui/filter_template.py), because Open WebUI runs a function
file with its own interpreter, where the library is not installed. A copy-paste
detector will report this file as a duplicate of guardrail/; it is one, made on purpose,
and the repository's tests fail when it is stale.

To install in Open WebUI, open Admin Panel > Functions, click +, paste this file, save it,
enable it and make it global (or attach it to models); see docs/integrations.md."""


LIBRARY = (
    guardrail.json_shapes,
    guardrail.shapes,
    guardrail.patterns,
    guardrail.registries,
    guardrail.model_profiles,
    guardrail.code_context,
    guardrail.json_reply,
    guardrail.pythonic_reply,
    guardrail.reply_calls,
    guardrail.harmony,
    guardrail.scaffolding,
)
"""The library modules pasted whole, each after the ones it imports."""


def render() -> str:
    """The pasteable file's text."""
    library = [_Source.of(module.__file__ or "") for module in LIBRARY]
    policy = _Source.of(guardrail.policy.__file__)
    template = _Source.of(filter_template.__file__)
    wanted = _imported_from(template, "guardrail.policy")
    whole = "the whole module after its imports"
    parts = [
        *((source, whole, source.body()) for source in library),
        (policy, ", ".join(sorted(wanted)) + " and what they use", _picked(policy, wanted)),
        (template, whole, template.body()),
    ]
    _check_no_clash(library, policy, wanted, template)
    code = "\n\n".join(f"# ---- {source.name}: {what}\n\n\n{body}" for source, what, body in parts)
    imports = _imports([*library, policy, template], _names_used(code))
    text = (
        _docstring(frontmatter(_project_version()))
        + "\n# DeepSeek's markers are written with U+FF5C and U+2581 (as in guardrail/).\n"
        + "# ruff: noqa: RUF001\n\n"
        + "from __future__ import annotations\n\n"
        + imports
        + "\n"
        + code
    )
    _check(text, template)
    return text


def _check_no_clash(
    library: list[_Source], policy: _Source, wanted: set[str], template: _Source
) -> None:
    """Refuse two pasted modules that define the same top-level name: in one file, the
    later definition would silently replace the earlier one's."""
    owner: dict[str, str] = {}
    named = [
        *((source.name, _top_level(source)) for source in library),
        (policy.name, _needed(policy, wanted)),
        (template.name, _top_level(template)),
    ]
    for module, names in named:
        for name in sorted(names - {"__all__"}):
            if name in owner:
                raise BuildError(f"{name} is defined in both {owner[name]} and {module}")
            owner[name] = module


def _top_level(source: _Source) -> set[str]:
    return {name for statement in source.statements() for name in _defined(statement)}


def _needed(source: _Source, wanted: set[str]) -> set[str]:
    """The names `_picked` takes from `source`: `wanted` and what those use."""
    defines = {name: s for s in source.statements() for name in _defined(s)}
    needed: set[str] = set()
    todo = [n for n in wanted if n in defines]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += [n for n in _names_used_in(defines[name]) if n in defines]
    return needed


def _docstring(keys: dict[str, str]) -> str:
    lines = ['"""', *(f"{key}: {value}" for key, value in keys.items()), "", _NOTICE, '"""']
    return "\n".join(lines) + "\n"


def _project_version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def _imported_from(source: _Source, module: str) -> set[str]:
    return {
        alias.asname or alias.name
        for node in source.imports()
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


def _picked(source: _Source, wanted: set[str]) -> str:
    """The top-level statements of `source` that define `wanted` and what those use, in
    source order; an attribute docstring goes with its assignment."""
    statements = source.statements()
    defines = {name: s for s in statements for name in _defined(s)}
    missing = sorted(wanted - defines.keys())
    if missing:
        raise BuildError(f"{source.name} defines no {', '.join(missing)}")
    picked = {id(defines[name]) for name in _needed(source, wanted)}
    chunks: list[str] = []
    for index, statement in enumerate(statements):
        if id(statement) in picked:
            last = statement.end_lineno or 0
            following = statements[index + 1] if index + 1 < len(statements) else None
            if following is not None and _is_string(following):
                last = following.end_lineno or last  # its attribute docstring
            chunks.append(source.segment(_first_line(statement), last))
    return "\n\n".join(chunks)


def _imports(sources: Iterable[_Source], used: set[str]) -> str:
    """The import block of the file: every stdlib and third-party name the code uses,
    grouped and sorted as ruff's isort does (straight imports before from-imports)."""
    straight: set[tuple[str, str | None]] = set()
    members: dict[str, set[tuple[str, str | None]]] = {}
    for source in sources:
        for node in source.imports():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) in used:
                        straight.add((alias.name, alias.asname))
            elif node.module and node.module != "__future__" and not _is_ours(node):
                for alias in node.names:
                    if (alias.asname or alias.name) in used:
                        members.setdefault(node.module, set()).add((alias.name, alias.asname))
    groups: list[list[str]] = [[], []]
    for name, asname in sorted(straight):
        groups[_group(name)].append(f"import {name}" + (f" as {asname}" if asname else ""))
    for module in sorted(members):
        groups[_group(module)].append(_from_line(module, members[module]))
    return "\n\n".join("\n".join(group) for group in groups if group) + "\n"


def _from_line(module: str, names: set[tuple[str, str | None]]) -> str:
    ordered = sorted(names, key=lambda n: (_member_rank(n[0]), n[0].lower(), n[0]))
    items = [name + (f" as {asname}" if asname else "") for name, asname in ordered]
    line = f"from {module} import {', '.join(items)}"
    if len(line) <= LINE_LENGTH:
        return line
    return f"from {module} import (\n" + "".join(f"    {item},\n" for item in items) + ")"


def _member_rank(name: str) -> int:
    """ruff's isort order-by-type: CONSTANTS, then Classes, then the rest."""
    if name.isupper() and len(name) > 1:
        return 0
    return 1 if name[:1].isupper() else 2


def _group(module: str) -> int:
    return 0 if module.split(".")[0] in sys.stdlib_module_names else 1


def _is_ours(node: ast.ImportFrom) -> bool:
    """A relative import (`from .patterns import ...`) or one of our packages."""
    return node.level > 0 or (node.module or "").split(".")[0] in ("guardrail", "integrations")


def _check(text: str, template: _Source) -> None:
    """What makes a file Open WebUI loads as we mean it (the module docstring)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise BuildError(f"the generated file does not parse: {error}") from error
    for phrase in OPEN_WEBUI_REWRITES:
        if phrase in text:
            line = next(line for line in text.splitlines() if phrase in line)
            raise BuildError(f"Open WebUI would rewrite {phrase!r} in: {line.strip()}")
    keys = _read_frontmatter(text)
    if keys != frontmatter(_project_version()):
        raise BuildError(f"Open WebUI would read this frontmatter: {keys}")
    defined = {name for statement in tree.body for name in _defined(statement)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and _is_ours(node):
            raise BuildError(f"the generated file still imports {node.module}")
    needed = set[str]().union(
        *(
            _imported_from(template, module)
            for module in ("guardrail.policy", *(m.__name__ for m in LIBRARY))
        )
    )
    if needed - defined:
        raise BuildError(f"the template imports {sorted(needed - defined)}, defined nowhere")


def _read_frontmatter(text: str) -> dict[str, str]:
    """The frontmatter as Open WebUI's extract_frontmatter reads it."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != '"""':
        return {}
    keys: dict[str, str] = {}
    for line in lines[1:]:
        if '"""' in line:
            break
        match = _FRONTMATTER_LINE.match(line)
        if match:
            keys[match.group(1).strip()] = match.group(2).strip()
    return keys


def _names_used(code: str) -> set[str]:
    return _names_used_in(ast.parse(code))


def _names_used_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _defined(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _is_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Import | ast.ImportFrom)


def _is_all(statement: ast.stmt) -> bool:
    return _defined(statement) == ["__all__"]


def _is_string(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scaffold_guard.integrations.openwebui.build",
        description=(__doc__ or "").split("\n")[0],
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT})")
    parser.add_argument(
        "--check", action="store_true", help="only say whether the file is current (exit 1 if not)"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    try:
        text = render()
    except BuildError as error:
        print(f"build: {error}", file=sys.stderr)
        return 2
    current = out.read_text(encoding="utf-8") if out.is_file() else None
    if args.check:
        if current != text:
            print(f"{out} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{out} is current")
        return 0
    if current != text:
        out.write_text(text, encoding="utf-8")
    print(f"wrote {out}" if current != text else f"{out} was current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
