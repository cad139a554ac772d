"""zmpi.Config: the settings of a zmpi.Comm, as the C library's ZMPI_Config.

    cfg = zmpi.Config.from_env()            # the ZMPI_* environment variables, as the C library reads them
    cfg = zmpi.Config(eb_mode="abs", eb=1e-4, min_bytes=0)
    zc = zmpi.Comm(MPI.COMM_WORLD, config=cfg)
"""
import dataclasses
import math
import os
import warnings

from cffi import FFI

from ._native import DLOPEN_FLAGS, find_library
from ._native import lib as _codec

ffi = FFI()
ffi.cdef("""
typedef struct ZMPI_Config {
    int codec; int eb_mode; double eb; int scope; int threads; size_t min_bytes; size_t chunk;
    int algorithm[8];
    double net_bw; double net_lat; double comp_speed; double decomp_speed; double ratio;
    size_t scratch_keep; size_t channel_mem; int trunc_bits; int node_ranks;
    int intra_node; int decision;
} ZMPI_Config;
int ZMPI_Config_from_env(ZMPI_Config *cfg, const char **bad);
int ZMPI_Config_compresses(const ZMPI_Config *cfg);
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
    (0: 16 for float, 32 for double); node_ranks: 0, the MPI's own nodes, or k ranks per emulated node; intra_node: 0, messages
    between ranks of one node travel plain, 1 compressed; decision: 0, measured (time compressed and plain
    on a collective's first calls, keep the faster), 1, always compress. A field left None takes the environment's value or the
    built-in default (Config.from_env() shows them). eb without eb_mode: the environment's mode
    (ZMPI_EB_MODE), else "rel"; eb_mode "abs" / "rel" without eb: the environment's bound (ZMPI_EB),
    else ValueError; eb_mode "none" takes no bound."""
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
    node_ranks: int = None
    intra_node: int = None
    decision: int = None

    @classmethod
    def from_env(cls):
        """The defaults and the ZMPI_* environment variables; ValueError names a malformed one."""
        return cls.from_c(_env(ffi.new("ZMPI_Config *")))

    @classmethod
    def from_c(cls, c):
        kw = {f.name: getattr(c, f.name) for f in dataclasses.fields(cls)
              if f.name not in ("codec", "eb_mode", "scope")}
        return cls(codec=ffi.string(_codec.zmpi_codec_name(c.codec)).decode(), eb_mode=_EB_MODES[c.eb_mode],
                   scope=_SCOPES[c.scope], **kw)

    def to_c(self, c):
        """Fills the C struct c: the environment's settings (ValueError names a malformed ZMPI_ variable),
        then every field that is not None, the bound resolved as the class's docstring says."""
        _env(c)
        if self.codec is not None:
            codec = CODEC_AUTO if self.codec == "auto" else _codec.zmpi_codec_from_name(str(self.codec).encode())
            if codec < 0:
                raise ValueError(f"unknown codec {self.codec!r}")
            c.codec = codec
        if self.eb_mode is not None and self.eb_mode not in _EB_MODES:
            raise ValueError(f"eb_mode={self.eb_mode!r}: one of {_EB_MODES}")
        if self.scope is not None:
            if self.scope not in _SCOPES:
                raise ValueError(f"scope={self.scope!r}: one of {_SCOPES}")
            c.scope = _SCOPES.index(self.scope)
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in ("codec", "eb_mode", "scope") or v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v):
                raise ValueError(f"{f.name}={v!r}: a finite number >= 0")
            if f.name != "eb":
                setattr(c, f.name, v)
        self._bound(c)
        return c

    def _bound(self, c):
        """The bound of c (the environment's in it) with eb / eb_mode on top."""
        eb, mode = self.eb, self.eb_mode
        if mode == "none":
            if eb:
                raise ValueError(f"eb_mode='none' takes no bound (eb={eb!r}): give eb_mode 'abs' or 'rel'")
            c.eb_mode, c.eb = 0, 0.0
        elif mode is not None:  # "abs" / "rel": eb, else the environment's bound
            if eb is None and c.eb_mode != 0:
                eb = c.eb
            if not eb:
                raise ValueError(f"eb_mode={mode!r} without a bound: give eb (or set ZMPI_EB)")
            c.eb_mode, c.eb = _EB_MODES.index(mode), eb
        elif eb is not None:  # a bound without a mode: the environment's mode, else rel (as ZMPI_EB alone)
            if not eb:
                c.eb_mode, c.eb = 0, 0.0
            else:
                if c.eb_mode == 0:
                    env = os.environ.get("ZMPI_EB_MODE", "").strip().lower()
                    c.eb_mode = _EB_MODES.index(env) if env in ("abs", "rel") else _EB_MODES.index("rel")
                c.eb = eb


def _env(c):
    """c filled from the environment; ValueError names a malformed ZMPI_ variable (never a silent default)."""
    bad = ffi.new("const char **")
    if lib.ZMPI_Config_from_env(c, bad) != 0:
        name = ffi.string(bad[0]).decode() if bad[0] != ffi.NULL else "a ZMPI_ variable"
        raise ValueError(f"zmpi: {name}={os.environ.get(name, '')!r} is malformed (docs/configuration.md)")
    return c


def say_if_plain(cfg, c):
    """Settings under which no call compresses (no bound and an error-bounded codec, or "stored"): ValueError
    if cfg names the error-bounded codec, a RuntimeWarning if the codec is the environment's or the default
    (asked for by name, "stored" is what the caller wants: silent)."""
    if lib.ZMPI_Config_compresses(c):
        return
    if cfg.codec == "stored":
        return
    name = "auto" if c.codec == CODEC_AUTO else ffi.string(_codec.zmpi_codec_name(c.codec)).decode()
    if name == "stored":
        return
    msg = (f"zmpi.Comm: no error bound (eb=None and no ZMPI_EB) for the error-bounded codec {name!r}: "
           "no call would compress (give eb=, or codec='zstd' / 'xorlzc' for lossless compression)")
    if cfg.codec is not None:
        raise ValueError(msg)
    warnings.warn(msg + "; every call runs as plain MPI", RuntimeWarning, stacklevel=3)
