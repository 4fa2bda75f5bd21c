"""Which GPU architectures a compiled library carries code for, read from its file: the CUDA fat binaries
nvcc embeds in an ELF shared object's `.nv_fatbin` section, or a Windows DLL's (.pyd) `.nv_fatb` (section names
of PE files are cut at 8 characters). Nothing is loaded, no CUDA is needed, and only headers are read (a 600 MB
libtorch_cuda.so costs a few hundred small reads).

Layout (little endian): a fat binary is a header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size
of the entries} and entries {u16 kind (1 PTX, 2 ELF cubin), u16, u32 header size, u64 payload size, u32, u32,
u16 minor, u16 major, u32 arch (e.g. 86), u32, u32, u64 flags, ...}, each header followed by its payload. As documented
by github.com/n-eiling/cuda-fatbin-decompression (fatbin-decompress.h), and as `cuobjdump -all --list-elf --list-ptx`
lists the same files: an entry (cubin or PTX) whose flags hold 0x100000 is the architecture-specific variant, which cuobjdump 13.5
names sm_90a (xformers 0.0.33.post2's _C.so; its plain sm_75/sm_80 entries and bitsandbytes' sm_90 lack the bit).
Stdlib only, Python 3.8+: runs inside the worker.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, List, Optional, Set, Tuple

FATBIN_MAGIC = 0xBA55ED50
_ELF_MAGIC = b"\x7fELF"
_PE_MAGIC = b"MZ"
_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin", b".nv_fatb")
_KINDS = {1: "compute", 2: "sm"}  # PTX, cubin: written as torch.cuda.get_arch_list() writes them
_MAX_ENTRIES = 10000  # a bound on a corrupt file
_ARCH_SPECIFIC = 0x100000  # an entry's flag: code for exactly this architecture ("sm_90a"), runs on no other


def _elf_sections(f: BinaryIO) -> Iterator[Tuple[bytes, int, int]]:
    """(name, file offset, size) of each section of a 64-bit little-endian ELF file."""
    head = f.read(64)
    if len(head) < 64 or head[:4] != _ELF_MAGIC or head[4] != 2 or head[5] != 1:
        return
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if not shoff or shentsize < 64 or not shnum or shstrndx >= shnum:
        return
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        return
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    _, _, _, _, str_offset, str_size = headers[shstrndx]
    f.seek(str_offset)
    names = f.read(min(str_size, 1 << 20))
    for name_at, _, _, _, offset, size in headers:
        end = names.find(b"\0", name_at)
        yield names[name_at:end if end >= 0 else None], offset, size


def _pe_sections(f: BinaryIO) -> Iterator[Tuple[bytes, int, int]]:
    """(name, file offset, size) of each section of a PE file (a Windows DLL): the COFF header after "PE\\0\\0" at the
    offset the DOS header names, then 40-byte section headers (learn.microsoft.com/windows/win32/debug/pe-format)."""
    head = f.read(64)
    if len(head) < 64 or head[:2] != _PE_MAGIC:
        return
    pe, = struct.unpack_from("<I", head, 0x3C)
    f.seek(pe)
    coff = f.read(24)
    if len(coff) < 24 or coff[:4] != b"PE\0\0":
        return
    count, = struct.unpack_from("<H", coff, 6)
    optional, = struct.unpack_from("<H", coff, 20)
    f.seek(pe + 24 + optional)
    table = f.read(40 * count)
    for i in range(len(table) // 40):
        name, virtual_size, _, raw_size, raw_at = struct.unpack_from("<8sIIII", table, 40 * i)
        yield name.rstrip(b"\0"), raw_at, min(virtual_size, raw_size) or raw_size


def _entries(f: BinaryIO, start: int, size: int) -> Iterator[Tuple[int, int, str]]:
    """(kind, arch, suffix) of every entry of the fat binaries laid end to end in one section."""
    at, end, seen = start, start + size, 0
    while at + 16 <= end and seen < _MAX_ENTRIES:
        f.seek(at)
        magic, _, header_size, fat_size = struct.unpack("<IHHQ", f.read(16))
        if magic != FATBIN_MAGIC:
            at += 8  # fat binaries are 8-byte aligned; padding may sit between them
            continue
        entry, last = at + header_size, min(at + header_size + fat_size, end)
        while entry + 48 <= last and seen < _MAX_ENTRIES:
            f.seek(entry)
            kind, _, entry_header, payload, _, _, _, _, arch, _, _, flags = struct.unpack("<HHIQIIHHIIIQ", f.read(48))
            if entry_header < 48:
                break
            yield kind, arch, "a" if flags & _ARCH_SPECIFIC else ""
            seen += 1
            entry += entry_header + payload
        at = at + header_size + fat_size if fat_size else at + 8


def cuda_archs(path: str) -> Optional[List[str]]:
    """The architectures the file's fat binaries hold, sorted ("sm_80", "sm_90", "compute_90"); [] for a shared object
    or DLL without CUDA code, None where the file is neither."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
            sections = _elf_sections if magic == _ELF_MAGIC else _pe_sections if magic[:2] == _PE_MAGIC else None
            if sections is None:
                return None
            f.seek(0)
            found: Set[Tuple[int, int, str]] = set()
            for name, offset, size in list(sections(f)):
                if name in _SECTIONS and size:
                    found.update(_entries(f, offset, size))
    except (OSError, struct.error):
        return None
    archs = {"%s_%d%s" % (_KINDS[kind], arch, suffix) for kind, arch, suffix in found if kind in _KINDS and arch}
    return sorted(archs, key=lambda a: (int(a.split("_")[1].rstrip("a")), a.startswith("compute"), a))
