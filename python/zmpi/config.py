"""zmpi.Config: the settings of a zmpi.Comm, as the C library's ZMPI_Config.

    cfg = zmpi.Config.from_env()            # the ZMPI_* environment variables, as the C library reads them
    cfg = zmpi.Config(eb_mode="abs", eb=1e-4, min_bytes=0)
    zc = zmpi.Comm(MPI.COMM_WORLD, config=cfg)
"""
import dataclasses
import os

from cffi import FFI

from ._native import DLOPEN_FLAGS, find_library
from ._native import lib as _codec

ffi = FFI()
ffi.cdef("""
typedef struct ZMPI_Config {
    int codec; int eb_mode; double eb; int scope; int threads; size_t min_bytes; size_t chunk;
    int algorithm[8];
    double net_bw; double net_lat; double comp_speed; double decomp_speed; double ratio;
    size_t scratch_keep; size_t channel_mem; int trunc_bits;
} ZMPI_Config;
int ZMPI_Config_from_env(ZMPI_Config *cfg, const char **bad);
""")


lib = ffi.dlopen(find_library("libzmpi_mpi.so"), DLOPEN_FLAGS)
CODEC_AUTO = 64  # ZMPI_CODEC_AUTO: fzl, or fzr where the model finds it pays (needs net_bw)
_EB_MODES = ("none", "abs", "rel")
_SCOPES = ("result", "message")


@dataclasses.dataclass
class Config:
    """The settings of a communicator (C: ZMPI_Config; docs/configuration.md for each).

    codec: "auto" or a codec name; eb_mode: "none" (lossless codecs only), "abs" or "rel"; eb: the bound;
    scope: "result" (the bound holds on a collective's result) or "message"; threads: OpenMP
    threads per compression; min_bytes: smaller calls go plain; chunk: elements per pipelined
    chunk; net_bw (bytes/s, 0 = unknown: compress whenever possible), net_lat (s), comp_speed,
    decomp_speed (bytes/s, 0 = built-in), ratio (0 = estimated): the model behind "compress only
    when it pays"; scratch_keep, channel_mem: bytes kept between calls; trunc_bits: bits trunc drops
    (0: 16 for float, 32 for double). A field left None takes the environment's value or the
    built-in default (Config.from_env() shows them)."""
    codec: str = None
    eb_mode: str = None
    eb: float = None
    scope: str = None
    threads: int = None
    min_bytes: int = None
    chunk: int = None
    net_bw: float = None
    net_lat: float = None
    comp_speed: float = None
    decomp_speed: float = None
    ratio: float = None
    scratch_keep: int = None
    channel_mem: int = None
    trunc_bits: int = None

    @classmethod
    def from_env(cls):
        """The defaults and the ZMPI_* environment variables; ValueError names a malformed one."""
        c = ffi.new("ZMPI_Config *")
        bad = ffi.new("const char **")
        rc = lib.ZMPI_Config_from_env(c, bad)
        if rc != 0:
            name = ffi.string(bad[0]).decode() if bad[0] != ffi.NULL else "a ZMPI_ variable"
            raise ValueError(f"zmpi: {name}={os.environ.get(name, '')!r} is malformed (docs/configuration.md)")
        return cls.from_c(c)

    @classmethod
    def from_c(cls, c):
        kw = {f.name: getattr(c, f.name) for f in dataclasses.fields(cls)
              if f.name not in ("codec", "eb_mode", "scope")}
        return cls(codec=ffi.string(_codec.zmpi_codec_name(c.codec)).decode(), eb_mode=_EB_MODES[c.eb_mode],
                   scope=_SCOPES[c.scope], **kw)

    def to_c(self, c):
        """Fills the C struct c: the environment's settings, then every field that is not None."""
        lib.ZMPI_Config_from_env(c, ffi.NULL)
        if self.codec is not None:
            codec = CODEC_AUTO if self.codec == "auto" else _codec.zmpi_codec_from_name(str(self.codec).encode())
            if codec < 0:
                raise ValueError(f"unknown codec {self.codec!r}")
            c.codec = codec
        if self.eb_mode is not None:
            if self.eb_mode not in _EB_MODES:
                raise ValueError(f"eb_mode={self.eb_mode!r}: one of {_EB_MODES}")
            c.eb_mode = _EB_MODES.index(self.eb_mode)
        if self.scope is not None:
            if self.scope not in _SCOPES:
                raise ValueError(f"scope={self.scope!r}: one of {_SCOPES}")
            c.scope = _SCOPES.index(self.scope)
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("codec", "eb_mode", "scope") or v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v:
                raise ValueError(f"{f.name}={v!r}: a number >= 0")
            setattr(c, f.name, v)
        return c
