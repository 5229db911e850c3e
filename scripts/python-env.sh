#!/usr/bin/env bash
# A Python virtual environment with what docs/examples/resolve_pointers.py needs
# (confluent-kafka, azure-storage-blob and boto3 from PyPI) and the S3 emulator the
# tests run (moto's server mode), in .cache/ (ignored by git). Prints the path
# of its python. Versions: DEV_PY_CONFLUENT_KAFKA (2.16.1),
# DEV_PY_AZURE_STORAGE_BLOB (12.31.1), DEV_PY_MOTO (5.2.5), DEV_PY_BOTO3 (1.44.5).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_dir=$root/.cache/pyenv
kafka_version=${DEV_PY_CONFLUENT_KAFKA:-2.16.1}
blob_version=${DEV_PY_AZURE_STORAGE_BLOB:-12.31.1}
moto_version=${DEV_PY_MOTO:-5.2.5}
boto3_version=${DEV_PY_BOTO3:-1.44.5}
stamp=$env_dir/.installed-$kafka_version-$blob_version-$moto_version-$boto3_version
if [ ! -f "$stamp" ]; then
  command -v python3 >/dev/null || { echo "python-env: python3 not found" >&2; exit 1; }
  rm -rf "$env_dir"
  python3 -m venv "$env_dir" >&2
  "$env_dir/bin/pip" install --quiet --disable-pip-version-check \
    "confluent-kafka==$kafka_version" "azure-storage-blob==$blob_version" "moto[server]==$moto_version" "boto3==$boto3_version" >&2
  touch "$stamp"
fi
echo "$env_dir/bin/python"
