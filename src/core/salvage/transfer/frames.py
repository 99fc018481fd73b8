# Salvage's single-pass reader (frames.ts reads what it writes): each file named on stdin (NUL-separated, taken as
# bytes, never interpreted) is opened once without following a symlink, read once up to the size it had when opened,
# hashed while it is sent, and framed. Records, big-endian:
#   F <u32 index> <u32 mode> <u64 size>   a file starts; D records with its bytes follow
#   D <u32 length> <bytes>                 bytes of the current file
#   E <32-byte SHA-256> <u64 bytes sent>   the current file ends; the hash is of exactly the bytes sent
#   A <u16 length> <utf-8 message>         the current file could not be read to its end (its bytes are discarded)
#   X <u32 index> <u16 length> <message>   a file that was not sent, and why
#   Z                                      every file was handled
import errno
import hashlib
import os
import stat
import struct
import sys

CHUNK = 256 * 1024
FLUSH = 1024 * 1024
FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def text(s):
    return s.encode("utf-8", "replace")[:4000]


def not_sent(i, why):
    t = text(why)
    return struct.pack(">cIH", b"X", i, len(t)) + t


def open_error(i, name, e):
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return not_sent(i, "vanished from the node")
    if e.errno == errno.ELOOP:
        try:
            target = os.fsdecode(os.readlink(name))
        except OSError:
            target = "?"
        return not_sent(i, "became a symlink (\u2192 %s); not followed" % target)
    if e.errno == errno.ENXIO:
        return not_sent(i, "not a regular file any more")
    return not_sent(i, "cannot be read on the node: %s" % (e.strerror or e))


def main():
    names = sys.stdin.buffer.read().split(b"\0")
    if names and names[-1] == b"":
        names.pop()
    out = sys.stdout.buffer
    buf = bytearray()
    for i, name in enumerate(names):
        try:
            fd = os.open(name, FLAGS)
        except OSError as e:
            buf += open_error(i, name, e)
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                buf += not_sent(i, "not a regular file any more")
                continue
            size = st.st_size
            buf += struct.pack(">cIIQ", b"F", i, stat.S_IMODE(st.st_mode), size)
            h = hashlib.sha256()
            left = size
            try:
                while left > 0:
                    b = os.read(fd, min(CHUNK, left))
                    if not b:
                        break
                    h.update(b)
                    buf += struct.pack(">cI", b"D", len(b))
                    buf += b
                    left -= len(b)
                    if len(buf) >= FLUSH:
                        out.write(buf)
                        del buf[:]
            except OSError as e:
                t = text("read failed on the node: %s" % (e.strerror or e))
                buf += struct.pack(">cH", b"A", len(t)) + t
                continue
            buf += struct.pack(">c32sQ", b"E", h.digest(), size - left)
        finally:
            os.close(fd)
        if len(buf) >= FLUSH:
            out.write(buf)
            del buf[:]
    buf += b"Z"
    out.write(buf)
    out.flush()


main()
