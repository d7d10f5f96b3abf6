"""Fetch App Mesh 3.0's Python SDK from PyPI and rename it as svc's specification renames the brand.

    python3 fetch_sdk.py DEST_DIR

downloads the `appmesh` wheel of SDK_VERSION (without dependencies) into a temp dir and writes the
package renamed to DEST_DIR/svc/: `appmesh` -> `svc`, `AppMesh` -> `Svc`, `APP_MESH_` -> `SVC_`
(so `X-AppMesh-` -> `X-Svc-` and the path prefix `/appmesh/` -> `/svc/`), module file names too.
Its code is read at test time only and never committed to this repository.
"""
import os
import subprocess
import sys
import tempfile
import zipfile

SDK_VERSION = "3.0.14"
RENAMES = (("X-AppMesh-", "X-Svc-"), ("/appmesh/", "/svc/"), ("APP_MESH_", "SVC_"), ("AppMesh", "Svc"), ("appmesh", "svc"))


def rename(text: str) -> str:
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


def main(dest: str) -> None:
    with tempfile.TemporaryDirectory(prefix="svc-appmesh-wheel-") as wheel_dir:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "-d", wheel_dir, f"appmesh=={SDK_VERSION}"],
            check=True,
        )
        (wheel,) = [f for f in os.listdir(wheel_dir) if f.endswith(".whl")]
        package = os.path.join(dest, "svc")
        os.makedirs(package, exist_ok=True)
        with zipfile.ZipFile(os.path.join(wheel_dir, wheel)) as archive:
            for name in archive.namelist():
                if not name.startswith("appmesh/") or not name.endswith(".py"):
                    continue
                target = os.path.join(package, rename(os.path.basename(name)))
                with open(target, "w", encoding="utf-8") as out:
                    out.write(rename(archive.read(name).decode("utf-8")))


if __name__ == "__main__":
    main(sys.argv[1])
