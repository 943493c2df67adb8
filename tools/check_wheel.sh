#!/usr/bin/env bash
# A wheel built from the sdist runs where nothing can compile (`make wheel-check`, CI).
#
#   tools/check_wheel.sh [--wheel FILE]
#
# 1. builds the sdist (python -m build --sdist), then a wheel FROM THAT SDIST
#    (pip wheel --no-deps; pip's build isolation fetches setuptools and Cython), both
#    with the default flags (LANDMARKING_NATIVE unset: the platform's baseline);
# 2. checks that the wheel holds one compiled module per .pyx of the sdist, and that
#    none holds AVX-512 code (objdump -d: zmm registers, xmm16-31/ymm16-31, opmask
#    registers); prints the ymm (AVX) count of each;
# 3. installs the wheel into a new virtual environment with CC=false and no cc or gcc
#    on PATH, its dependencies as binary wheels only (--only-binary=:all:);
# 4. runs tools/wheel_smoke.py there, from a folder outside the source tree: every
#    public estimator fits, transforms, saves, loads and transforms to the same bits.
#
# --wheel FILE skips step 1 and checks FILE. PY (default .venv/bin/python) is the
# interpreter that builds; the new environment uses the same Python. KEEP=1 keeps the
# work folder. Needs network access to the package index, and objdump (binutils).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
case $PY in  # absolute, but not resolved: a venv's python is a symlink
    */*) [[ $PY == /* ]] || PY=$PWD/$PY ;;
    *) PY=$(command -v "$PY") ;;
esac
WHEEL=
if [[ ${1:-} == --wheel ]]; then
    WHEEL=$(realpath "$2")
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/landmarking-wheel-check.XXXXXX")
if [[ ${KEEP:-0} == 1 ]]; then
    echo "work folder: $WORK"
else
    trap 'rm -rf "$WORK"' EXIT
fi
# The portable build is the one a wheel must have.
unset LANDMARKING_NATIVE LANDMARKING_PORTABLE_BUILD
SECONDS=0
step() { printf '[%4ds] %s\n' "$SECONDS" "$*"; }
fail() { echo "check_wheel: $*" >&2; exit 1; }
command -v objdump >/dev/null || fail "objdump not found (install binutils)"

if [[ -z $WHEEL ]]; then
    step "sdist (python -m build --sdist)"
    "$PY" -m pip install --quiet "build>=1.2"
    "$PY" -m build --sdist --outdir "$WORK/dist" "$ROOT" >"$WORK/sdist.log" 2>&1 \
        || { tail -40 "$WORK/sdist.log"; fail "the sdist did not build"; }
    SDIST=$(ls "$WORK"/dist/*.tar.gz)
    step "wheel from $(basename "$SDIST") (pip wheel --no-deps)"
    "$PY" -m pip wheel --no-deps --wheel-dir "$WORK/wheel" "$SDIST" >"$WORK/wheel.log" 2>&1 \
        || { tail -60 "$WORK/wheel.log"; fail "no wheel could be built from the sdist"; }
    WHEEL=$(ls "$WORK"/wheel/*.whl)
fi
step "contents of $(basename "$WHEEL")"

# Every .pyx of the sdist (or of the source tree, for --wheel) is one module in the wheel.
"$PY" - "$WHEEL" "$WORK/so" "${SDIST:-$ROOT}" <<'EOF'
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

wheel, out, source = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
if source.is_file():
    with tarfile.open(source) as sdist:
        names = [PurePosixPath(n) for n in sdist.getnames()]
    pyx = [PurePosixPath(*n.parts[2:]) for n in names  # top folder/src/...
           if n.suffix == ".pyx" and n.parts[1:2] == ("src",)]
else:
    pyx = [PurePosixPath(p.relative_to(source / "src").as_posix())
           for p in (source / "src").rglob("*.pyx")]
expected = sorted(".".join(p.with_suffix("").parts) for p in pyx)
if not expected:
    sys.exit("check_wheel: no .pyx file in the sdist")
with zipfile.ZipFile(wheel) as archive:
    members = archive.namelist()
    compiled = {}
    for member in members:
        path = PurePosixPath(member)
        if path.suffix in (".so", ".pyd"):
            module = ".".join([*path.parent.parts, path.name.split(".")[0]])
            compiled[module] = member
            target = out / module
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))
missing = sorted(set(expected) - set(compiled))
extra = sorted(set(compiled) - set(expected))
built = [m for m in members if m.endswith((".c", ".o"))]
for module in expected:
    print(f"  {module}: {compiled.get(module, 'MISSING')}")
if missing or extra or built:
    sys.exit(f"check_wheel: compiled modules missing {missing}, unexpected {extra}; "
             f"build files in the wheel {built}")
EOF

# AVX-512: zmm registers, the 16 registers only it has (xmm16-31, ymm16-31) and its
# opmask registers {%k1}-{%k7}. AVX (ymm) is reported, not refused.
bad=0
for so in "$WORK"/so/*; do
    asm=$(objdump -d --no-show-raw-insn "$so")
    zmm=$(grep -c '%zmm' <<<"$asm" || true)
    high=$(grep -cE '%[xy]mm(1[6-9]|2[0-9]|3[01])\b' <<<"$asm" || true)
    mask=$(grep -cE '\{%k[1-7]\}' <<<"$asm" || true)
    ymm=$(grep -c '%ymm' <<<"$asm" || true)
    printf '  %-34s zmm %5d  xmm/ymm16-31 %5d  opmask %4d  ymm %5d\n' \
        "$(basename "$so")" "$zmm" "$high" "$mask" "$ymm"
    if ((zmm + high + mask > 0)); then bad=1; fi
done
((bad == 0)) || fail "AVX-512 instructions in the wheel: it was built with -march=native \
(LANDMARKING_NATIVE=1) or CFLAGS naming the build machine; a wheel must run on any \
processor of its platform"

step "new environment, no compiler: CC=false, PATH without cc/gcc"
"$PY" -m venv --without-pip "$WORK/venv"
mkdir "$WORK/bin"
for tool in lscpu nproc uname; do  # joblib counts the cores with lscpu
    if where=$(command -v "$tool"); then ln -s "$where" "$WORK/bin/"; fi
done
NOCC_PATH="$WORK/venv/bin:$WORK/bin"
if PATH=$NOCC_PATH command -v cc gcc >/dev/null 2>&1; then fail "a compiler is on PATH"; fi
# The build interpreter's pip installs into the new environment (--python).
env CC=false CXX=false PATH="$NOCC_PATH" "$PY" -m pip --python "$WORK/venv/bin/python" \
    install --quiet --only-binary=:all: "$WHEEL"

step "smoke run from $WORK/run"
mkdir "$WORK/run"
cp "$ROOT/tools/wheel_smoke.py" "$WORK/run/"
(cd "$WORK/run" && env -u PYTHONPATH CC=false CXX=false PATH="$NOCC_PATH" MPLBACKEND=Agg \
    "$WORK/venv/bin/python" wheel_smoke.py)
step "wheel check passed"
