"""Regenerate bookie/_proto/ from the .proto files beside this script.

    python proto/generate.py            # write into the repository
    python proto/generate.py --out DIR  # write DIR/bookie/_proto/ instead (the staleness test uses this)

protoc sees the sources under the virtual path bookie/_proto/ (``-Ibookie/_proto=proto``), so the generated modules
import each other as ``bookie._proto.x_pb2``, matching the package they live in.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
REPO = PROTO_DIR.parent
PACKAGE = "bookie/_proto"
SOURCES = (
    "bookkeeper_protocol.proto",
    "bookie_admin.proto",
    "data_formats.proto",
    "db_ledger_storage.proto",
    "pulsar_ml_data_formats.proto",  # Apache Pulsar's, read by admin/pulsar/
    "pulsar_schema_storage_format.proto",
)
WITH_SERVICES = ("bookie_admin.proto",)
INIT = '"""Generated from proto/ by proto/generate.py. Do not edit."""\n'


def generate(out_root: Path) -> list[Path]:
    """Generate the Python modules into ``out_root/bookie/_proto`` and return the files written."""
    from grpc_tools import protoc  # only needed to regenerate

    target = out_root / PACKAGE
    target.mkdir(parents=True, exist_ok=True)
    include = str(Path(protoc.__file__).parent / "_proto")
    for source in SOURCES:
        args = ["protoc", f"-I{PACKAGE}={PROTO_DIR}", f"-I{include}", f"--python_out={out_root}"]
        if source in WITH_SERVICES:
            args.append(f"--grpc_python_out={out_root}")
        if protoc.main([*args, f"{PACKAGE}/{source}"]) != 0:
            raise SystemExit(f"protoc failed on {source}")
    (target / "__init__.py").write_text(INIT)
    return sorted(target.glob("*.py"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO, help="root to write bookie/_proto/ under")
    written = generate(parser.parse_args().out)
    print(f"wrote {len(written)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
