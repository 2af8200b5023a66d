"""A PEP 517 build backend in the standard library alone (zipfile, tarfile): `pip install ./python`
works without setuptools or wheel. It packs hull/ as a pure-Python wheel and an sdist."""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = "hull", "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = "%s-%s" % (NAME, VERSION)
METADATA = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: hull for Python programs: solve(), "
            "Conversation, plain callables as tools, handles as objects\nRequires-Python: >=3.9\n"
            "Provides-Extra: pandas\nRequires-Dist: pandas; extra == \"pandas\"\n" % (NAME, VERSION))
WHEEL = "Wheel-Version: 1.0\nGenerator: hull_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _files():
    for root, dirs, files in os.walk(os.path.join(HERE, "hull")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                full = os.path.join(root, f)
                yield full, os.path.relpath(full, HERE)


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arc, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST + ".dist-info")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(WHEEL)
    return DIST + ".dist-info"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = DIST + "-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in _files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for fname, text in (("METADATA", METADATA), ("WHEEL", WHEEL)):
            arc = "%s.dist-info/%s" % (DIST, fname)
            z.writestr(arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append("%s.dist-info/RECORD,," % DIST)
        z.writestr("%s.dist-info/RECORD" % DIST, "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    name = DIST + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/hull_build.py"] + [a for _, a in _files()]:
            t.add(os.path.join(HERE, rel), arcname="%s/%s" % (DIST, rel))
        info = tarfile.TarInfo("%s/PKG-INFO" % DIST)
        data = METADATA.encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
