#!/usr/bin/env bash
# A Python virtual environment with offloader's Python package (clients/python,
# installed as a user would: pip install ./clients/python), what it and
# docs/examples/resolve_pointers.py use (confluent-kafka with its Avro and
# schema-registry extras, azure-storage-blob,
# boto3, the codecs' zstandard, lz4 and cramjam), pytest, and the S3 emulator
# the tests run (moto's server mode), in .cache/ (ignored by git). Prints the
# path of its python. The package is installed again whenever its sources
# change. Versions: DEV_PY_CONFLUENT_KAFKA (2.16.1), DEV_PY_AZURE_STORAGE_BLOB
# (12.31.1), DEV_PY_MOTO (5.2.5), DEV_PY_BOTO3 (1.44.5); the others are pinned
# in requirements below.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_dir=$root/.cache/pyenv
kafka_version=${DEV_PY_CONFLUENT_KAFKA:-2.16.1}
blob_version=${DEV_PY_AZURE_STORAGE_BLOB:-12.31.1}
moto_version=${DEV_PY_MOTO:-5.2.5}
boto3_version=${DEV_PY_BOTO3:-1.44.5}
requirements="confluent-kafka[avro,schemaregistry]==$kafka_version azure-storage-blob==$blob_version moto[server]==$moto_version boto3==$boto3_version pytest==8.4.2 zstandard==0.25.0 lz4==4.4.4 cramjam==2.11.0"
stamp=$env_dir/.installed-$(echo "$requirements" | sha256sum | cut -c1-16)
mkdir -p "$root/.cache"
# Tests ask for the environment in parallel: one of them builds it.
exec 9>"$root/.cache/pyenv.lock"
flock 9
if [ ! -f "$stamp" ]; then
  command -v python3 >/dev/null || { echo "python-env: python3 not found" >&2; exit 1; }
  rm -rf "$env_dir"
  python3 -m venv "$env_dir" >&2
  echo "python-env: first use: installing $requirements into $env_dir (a few minutes; pip says what it fetches)" >&2
  # shellcheck disable=SC2086 # a list of requirements
  "$env_dir/bin/pip" install --progress-bar off --disable-pip-version-check $requirements >&2
  touch "$stamp"
fi
package=$root/clients/python
sources=$(find "$package/pyproject.toml" "$package/src/offloader_client" -type f \( -name '*.py' -o -name '*.toml' -o -name py.typed \) | sort | xargs cat | sha256sum | cut -c1-16)
if [ ! -f "$env_dir/.client-$sources" ]; then
  "$env_dir/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "$package" >&2
  rm -f "$env_dir"/.client-*
  touch "$env_dir/.client-$sources"
fi
echo "$env_dir/bin/python"
