#!/usr/bin/env bash
# Regenerates the lock files (*.lock) from the inputs (*.in), exact versions with the SHA-256 of every file PyPI
# serves for them, for CPython 3.11 (Debian 12's python3) on x86_64 Linux. A maintainer's tool, run by hand after
# changing an input or to move to newer releases; it needs uv (`pip install uv`), a resolver that can resolve for
# a platform other than its own and drop a dependency (the *.override files). Installing needs only pip:
# install.sh runs `pip install --require-hashes --no-deps` on the lock files written here.
#   scripts/ecosystem/lock.sh            all environments
#   scripts/ecosystem/lock.sh core verl  some
set -euo pipefail
cd "$(dirname "$0")"
uv=${UV:-uv}
envs=("$@")
[ ${#envs[@]} -gt 0 ] || envs=(torch core openenv verifiers verifiers-v0 verl openrlhf llamacpp-build llamacpp)
for env in "${envs[@]}"; do
  extra=()
  [ -f "$env.override" ] && extra=(--override "$env.override")
  "$uv" pip compile --quiet --python-version 3.11 --python-platform x86_64-manylinux_2_36 --generate-hashes \
    --no-header --custom-compile-command "scripts/ecosystem/lock.sh $env" "${extra[@]}" "$env.in" -o "$env.lock"
  # An environment on the shared PyTorch (its input pins torch) leaves out what the torch layer already holds at
  # the same version: install.sh makes the layer visible to it through a .pth file.
  layer=/dev/null
  [ "$env" != torch ] && grep -qx 'torch==.*' "$env.in" && layer=torch.lock
  python3 - "$env" "$layer" <<'PY'
import re, sys
env, layer_lock = sys.argv[1], sys.argv[2]
def blocks(path):
    out, cur = [], None
    for line in open(path):
        if re.match(r"[A-Za-z0-9]", line):
            cur = [line]
            out.append(cur)
        elif cur is not None:
            cur.append(line)
    return out
layer = {b[0].split()[0] for b in blocks(layer_lock)}
kept = [b for b in blocks(env + ".lock") if b[0].split()[0] not in layer]
with open(env + ".lock", "w") as f:
    f.write(f"# Written by scripts/ecosystem/lock.sh from {env}.in; install.sh installs it. Do not edit.\n")
    if layer:
        f.write("# Installed on top of torch.lock (the shared PyTorch layer); the packages it holds are left out.\n")
    f.writelines(line for b in kept for line in b)
PY
  echo "lock.sh: $env.lock: $(grep -c '^[A-Za-z0-9]' "$env.lock") packages" >&2
done
