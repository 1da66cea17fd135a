"""No network for the Helm render child: a seccomp filter that makes socket(2) fail with EACCES.

Defence in depth under helm_schema.py's screen: whatever a chart makes Helm try (a schema
reference the screen missed, a lookup, a DNS query), the process and every thread it starts
afterwards cannot open a socket of any family, so no connection leaves it, loopback included.
io_uring, which can open sockets without socket(2), is refused too, as are the x32 system calls
of x86-64. Linux on x86-64 and arm64 only: elsewhere `deny_sockets` returns False and the render
runs without the filter (the screen still applies).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys

# <linux/audit.h>, and the architectures' system call numbers
_ARCHES = {"x86_64": (0xC000003E, 41, 425), "aarch64": (0xC00000B7, 198, 425), "arm64": (0xC00000B7, 198, 425)}
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | errno.EACCES  # SECCOMP_RET_ERRNO
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(arch: int, socket: int, io_uring_setup: int) -> bytes:
    """The filter: another architecture's calls, x32 calls, socket and io_uring_setup fail; the rest run."""
    return b"".join([
        _instruction(_LOAD, 0, 0, 4),  # seccomp_data.arch
        _instruction(_JEQ, 1, 0, arch),
        _instruction(_RET, 0, 0, _DENY),
        _instruction(_LOAD, 0, 0, 0),  # seccomp_data.nr
        _instruction(_JGE, 3, 0, 0x40000000),  # x32
        _instruction(_JEQ, 2, 0, socket),
        _instruction(_JEQ, 1, 0, io_uring_setup),
        _instruction(_RET, 0, 0, _ALLOW),
        _instruction(_RET, 0, 0, _DENY),
    ])


def deny_sockets() -> bool:
    """Install the filter on this thread (and the threads it starts from now on); False where it cannot."""
    numbers = _ARCHES.get(platform.machine().lower())
    if not sys.platform.startswith("linux") or numbers is None:
        return False
    code = program(*numbers)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fprog = _Program(len(code) // 8, code)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return bool(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0)
    except (OSError, AttributeError):
        return False
