#!/usr/bin/env bash
# The Gated-DeltaNet gradient check (python -m training.art.gdn_check) for fla-core 0.4.1 and
# 0.4.2 on a bare CUDA machine: only python, torch (with CUDA) and Triton installed, no network.
#
#   scripts/gdn_check.sh WHEELS [OUT]
#
# WHEELS holds fla_core-0.4.1, fla_core-0.4.2 and einops wheels (pure Python, < 1 MiB each),
# fetched on any machine with network:
#   pip download --no-deps fla-core==0.4.1 fla-core==0.4.2 einops==0.8.2 -d WHEELS
# Each version goes into its own folder under OUT (default: a temporary one) with
# pip --no-index --no-deps --target, so the machine's own packages are untouched. Each run has
# 150 s (Triton's first compile included). Prints both reports and one summary line; the exit
# status is 0.4.2's (the pinned one): 0 within tolerance, 1 past it, 2 cannot run. 0.4.1 is
# expected to fail dk and dg on SM90 with Triton 3.4-3.7.0 (fla issue #640).
set -u
WHEELS=${1:?usage: scripts/gdn_check.sh WHEELS [OUT]}
OUT=${2:-$(mktemp -d)}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 2
WHEELS=$(cd "$WHEELS" && pwd) || exit 2
summary=""
status=2
for version in 0.4.1 0.4.2; do
  target="$OUT/fla-$version"
  rm -rf "$target" && mkdir -p "$target"
  if ! "$PYTHON" -m pip install --quiet --no-index --no-deps --find-links "$WHEELS" \
      --target "$target" "fla-core==$version" einops; then
    echo "error: fla-core $version or einops is not in $WHEELS" >&2
    summary="$summary fla-core $version: not installed;"
    continue
  fi
  echo "== fla-core $version"
  PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" timeout 150 \
    "$PYTHON" -m training.art.gdn_check 2>&1 | tee "$OUT/fla-$version.txt"
  code=${PIPESTATUS[0]}
  case $code in
    0) verdict="within tolerance" ;;
    1) verdict="PAST TOLERANCE ($(grep -o 'FAILED: .*' "$OUT/fla-$version.txt" | head -1))" ;;
    124) verdict="timed out after 150 s" ;;
    *) verdict="could not run (exit $code)" ;;
  esac
  summary="$summary fla-core $version: $verdict;"
  [ "$version" = 0.4.2 ] && status=$code
done
echo "summary:$summary reports in $OUT"
[ "$status" = 124 ] && status=1
exit "$status"
