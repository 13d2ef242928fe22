"""Sets of files in and out: a folder or a zip read as ``{relative path: text}``, an export
of several files written into a folder (``--out FOLDER``) or one zip (over HTTP).

Zips are read in memory and never extracted, so no member name reaches the file system.
Against zip bombs each member is inflated in chunks with a running total, and reading stops
as soon as a member passes ``MAX_MEMBER_BYTES`` or all of them ``MAX_TOTAL_BYTES`` (whatever
their headers claim): a 202 KB zip holding 199 MiB peaked at ~2 GB before,
it is refused now within ~100 MB. Names written (a folder, a zip) are checked to stay
inside it (:func:`safe_name`).
"""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from app.errors import InvalidInput
from app.formats.records import Problem

MAX_FILES = 20_000
MAX_TOTAL_BYTES = 64 * 1024 * 1024
MAX_MEMBER_BYTES = 32 * 1024 * 1024  # the upload limit: one file of a zip is no larger
ZIP_CHUNK = 256 * 1024
READ_CHUNK = 1024 * 1024


def read_files(path: Path, problem: Problem, archive: bytes | None = None) -> dict[str, str]:
    """The text files of a folder or zip (``archive`` stands for the zip's bytes)."""
    if archive is None and path.is_dir():
        return _read_folder(path, problem)
    if archive is None:
        try:
            archive = path.read_bytes()
        except OSError as exc:
            raise problem(f"cannot read: {exc.strerror}") from None
    try:
        bundle = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise problem("is neither a folder nor a zip file") from None
    members = [m for m in bundle.infolist() if not m.is_dir()]
    if len(members) > MAX_FILES:
        raise problem(f"holds more than {MAX_FILES} files")
    if sum(m.file_size for m in members) > MAX_TOTAL_BYTES:
        raise problem(f"unpacks to more than {MAX_TOTAL_BYTES // 2**20} MiB")
    files: dict[str, str] = {}
    total = 0
    for member in members:
        name = clean_name(member.filename)
        if not name:
            continue
        data = _inflate(bundle, member, name, MAX_TOTAL_BYTES - total, problem)
        total += len(data)
        files[name] = _text(data, problem, name)
        del data
    return _without_common_folder(files)


def _inflate(
    bundle: zipfile.ZipFile, member: zipfile.ZipInfo, name: str, room: int, problem: Problem
) -> bytes:
    """One member's bytes, inflated a chunk at a time: refused as soon as it passes its own
    limit or the ``room`` left of the total (the sizes in the headers may lie)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with bundle.open(member) as handle:
            while chunk := handle.read(READ_CHUNK):
                size += len(chunk)
                if size > room:
                    raise problem(f"unpacks to more than {MAX_TOTAL_BYTES // 2**20} MiB")
                if size > MAX_MEMBER_BYTES:
                    raise problem(f"{name}: unpacks to more than {MAX_MEMBER_BYTES // 2**20} MiB")
                chunks.append(chunk)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
        raise problem(f"{name}: cannot unpack: {exc}") from None
    return b"".join(chunks)


def safe_name(name: str) -> str:
    """``name`` if it is a relative path that stays inside its folder or zip; else
    ValueError (a writer's bug: every exporter derives its names safely)."""
    if not name or clean_name(name) != name:
        raise ValueError(f"unsafe file name in an export: {name!r}")
    return name


def clean_name(name: str) -> str:
    """A member name as a relative path with no ``..``, ``.`` or leading ``/`` parts."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    return "/".join(p for p in parts if p not in ("", ".", "..", "/"))


def _without_common_folder(files: dict[str, str]) -> dict[str, str]:
    """A zip of one folder (``collection/a.txt``, ...) reads like the folder itself."""
    tops = {name.split("/", 1)[0] if "/" in name else "" for name in files}
    if len(tops) == 1 and "" not in tops:
        return {name.split("/", 1)[1]: text for name, text in files.items()}
    return files


def _read_folder(folder: Path, problem: Problem) -> dict[str, str]:
    files: dict[str, str] = {}
    total = 0
    for item in sorted(folder.rglob("*")):
        if not item.is_file() or item.is_symlink():
            continue
        if len(files) >= MAX_FILES:
            raise problem(f"holds more than {MAX_FILES} files")
        data = item.read_bytes()
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise problem(f"holds more than {MAX_TOTAL_BYTES // 2**20} MiB")
        name = item.relative_to(folder).as_posix()
        files[name] = _text(data, problem, name)
    return files


def _text(data: bytes, problem: Problem, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise problem(f"{name} is not UTF-8 text") from None


Body = bytes | Iterable[bytes]
"""A file of an export: its bytes, or (a big one) its bytes in chunks, read once in order."""


def chunks_of(body: Body) -> Iterator[bytes]:
    """A file's bytes in the chunks it comes in."""
    if isinstance(body, bytes):
        yield body
    else:
        yield from body


def whole(body: Body) -> bytes:
    return body if isinstance(body, bytes) else b"".join(body)


def write_folder(out: Path, files: Iterable[tuple[str, Body]]) -> int:
    """Write the files under ``out`` (built beside it and renamed: never a half folder)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInput(f"{out}: exists and is not an empty folder")
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    count = 0
    try:
        for name, data in files:
            target = partial / safe_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as handle:
                for chunk in chunks_of(data):
                    handle.write(chunk)
            count += 1
        partial.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.rmdir()
        partial.rename(out)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise InvalidInput(f"{out}: cannot write: {exc.strerror}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return count


class _Pipe:
    """A write-only file the zip is written into and read out of, chunk by chunk (no
    seek: :mod:`zipfile` writes each member's sizes after its data)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self.parts, self.size = b"".join(self.parts), [], 0
        return data


def zip_stream(files: Iterable[tuple[str, Body]]) -> Iterator[bytes]:
    """One zip of the files (deflated), in chunks as it is written: a file that comes in
    chunks is compressed chunk by chunk, so the zip of a big export is never held whole.
    Such a member is written with Zip64 fields (its size is not known before)."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", zipfile.ZIP_DEFLATED) as bundle:  # type: ignore[arg-type]
        for name, data in files:
            if isinstance(data, bytes):
                bundle.writestr(safe_name(name), data)
            else:
                with bundle.open(safe_name(name), "w", force_zip64=True) as member:
                    for chunk in data:
                        member.write(chunk)
                        if pipe.size >= ZIP_CHUNK:
                            yield pipe.take()
            if pipe.size >= ZIP_CHUNK:
                yield pipe.take()
    if pipe.parts:
        yield pipe.take()
