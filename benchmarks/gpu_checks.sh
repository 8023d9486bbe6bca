#!/usr/bin/env bash
# The CUDA paths, on a machine with a GPU and no network (docs/training.md, "On a GPU").
# The project's dependencies that the machine's Python lacks come as wheels in
# .whl/ (pip download --python-version of that machine); the project itself is
# installed from this checkout, not editable. Writes its logs to $OUT (or ./gpu-out).
set -uo pipefail
repo=$(pwd)
out=${OUT:-$repo/gpu-out}
mkdir -p "$out"
site=/tmp/rewardsmith-site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --target "$site" . || exit 1
export PYTHONPATH=$site PATH=$site/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name(0))"
# From /tmp: the checkout's own rewardsmith/ folder must not shadow the installed package.
cd /tmp
status=0
timeout 200 python3 -m pytest -q -o addopts="-p no:cacheprovider" --rootdir="$repo" "$repo/tests/test_cuda.py" 2>&1 | tee "$out/test_cuda.log" || status=1
start=$(date +%s)
timeout 180 python3 -m rewardsmith demo 2>&1 | tee "$out/demo.log" | tail -12 || status=1
echo "demo on the GPU: $(( $(date +%s) - start )) s"
exit $status
