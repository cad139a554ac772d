"""zmpi's errors as Python exceptions (all under zmpi.Error)."""
from ._native import ffi, lib


class Error(Exception):
    """An error zmpi reports; .code is the C library's code, .name its name."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code
        self.name = ffi.string(lib.zmpi_error_name(code)).decode() if code is not None else None


class BoundError(Error, ValueError):
    """A missing or invalid error bound."""


class CodecError(Error, ValueError):
    """An unknown codec, or a dtype or use the codec does not support."""


class CorruptStreamError(Error):
    """Data that is not a valid zmpi stream: truncated, altered, or from an unknown format version."""


_CLASSES = {-4: BoundError, -2: CodecError, -3: CodecError, -10: CodecError, -11: CodecError,
            -7: CorruptStreamError, -8: CorruptStreamError, -9: CorruptStreamError}


def raise_for(rc, what):
    """Raises the exception of a negative C return code (else returns rc)."""
    if rc >= 0:
        return rc
    if rc == -6:
        raise MemoryError(f"zmpi: {what}: out of memory")
    msg = ffi.string(lib.zmpi_strerror(rc)).decode()
    raise _CLASSES.get(rc, Error)(f"zmpi: {what}: {msg}", rc)
